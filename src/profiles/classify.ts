import type { ServerProfile } from './types.js';

export type LogLineClass =
  /** rank: position in the profile's list; lower is more specific (an OOM line beats the Traceback before it). */
  { kind: 'fatal'; name: string; hint: string; rank: number } | { kind: 'phase'; name: string };

// Servers colour their logs when they think they write to a terminal; colour codes must not break patterns.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the ESC control character is the point.
const ANSI_ESCAPE = /\u001b\[[0-9;?]*[A-Za-z]/g;

/** What one server log line means for startup: a fatal failure, a new phase, or nothing (undefined). Fatal wins. */
export function classifyLogLine(profile: ServerProfile, rawLine: string): LogLineClass | undefined {
  const line = rawLine.replace(ANSI_ESCAPE, '');
  const rank = profile.fatalPatterns.findIndex((candidate) => candidate.pattern.test(line));
  const fatal = profile.fatalPatterns[rank];
  if (fatal) return { kind: 'fatal', name: fatal.name, hint: fatal.hint, rank };
  const phase = profile.phasePatterns.find((candidate) => candidate.pattern.test(line));
  return phase && { kind: 'phase', name: phase.name };
}
