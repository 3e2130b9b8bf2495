/**
 * A resume replays the experiment the store kept, never the file as it is now. When the file was edited since the
 * run started, resuming silently would mix two configs in one run, so the resume refuses and lists what changed,
 * unless the user asks for the stored experiment (`--use-stored`).
 */
import { existsSync } from 'node:fs';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { loadExperiment } from '../spec/load.js';
import type { ResolvedExperiment } from '../spec/types.js';
import { redactExperiment } from './run-store.js';

export interface Difference {
  /** Path of the value, e.g. `variants.fast.server.command[3]`; lists of named entries are keyed by name. */
  key: string;
  before: string;
  after: string;
}

const ABSENT = '(none)';
const MAX_VALUE = 60;

/** Every place two JSON values differ: leaves by path, or the whole entry where one side has none. */
export function jsonDifferences(before: unknown, after: unknown, key = ''): Difference[] {
  if (JSON.stringify(before) === JSON.stringify(after)) return [];
  if (before === undefined || after === undefined || !isContainer(before) || !isContainer(after) || Array.isArray(before) !== Array.isArray(after))
    return [{ key: key || '(whole experiment)', ...shownPair(before, after) }];
  const entries = (value: object): Map<string, unknown> => (Array.isArray(value) ? arrayEntries(value) : new Map(Object.entries(value)));
  const a = entries(before);
  const b = entries(after);
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  return keys.flatMap((name) => {
    const child = Array.isArray(before) ? `${key}${name}` : key ? `${key}.${name}` : name;
    return jsonDifferences(a.get(name), b.get(name), child);
  });
}

/** A list whose entries all have distinct names (variants, workloads) is keyed by them: inserting one is one change. */
function arrayEntries(list: unknown[]): Map<string, unknown> {
  const names = list.map((item) =>
    isContainer(item) && !Array.isArray(item) ? ((item as { name?: unknown; label?: unknown }).name ?? (item as { label?: unknown }).label) : undefined,
  );
  const named = names.every((name) => typeof name === 'string') && new Set(names).size === names.length;
  return new Map(list.map((item, index) => [named ? `.${names[index] as string}` : `[${index}]`, item]));
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/** Both values as JSON; long ones cut to a window starting a little before where they first differ. */
function shownPair(before: unknown, after: unknown): { before: string; after: string } {
  const a = before === undefined ? ABSENT : JSON.stringify(before);
  const b = after === undefined ? ABSENT : JSON.stringify(after);
  let first = 0;
  while (first < a.length && a[first] === b[first]) first++;
  const start = Math.max(0, first - 20);
  const cut = (text: string): string => {
    if (text.length <= MAX_VALUE || text === ABSENT) return text;
    const window = text.slice(start, start + MAX_VALUE);
    return `${start > 0 ? '…' : ''}${window}${start + MAX_VALUE < text.length ? '…' : ''}`;
  };
  return { before: cut(a), after: cut(b) };
}

/** What differs between a run's stored experiment and a file's, secrets as markers on both sides; the path itself is not a difference. */
export function experimentDifferences(stored: ResolvedExperiment, file: ResolvedExperiment): Difference[] {
  const { filePath: _storedPath, ...kept } = stored;
  const { filePath: _filePath, ...fresh } = redactExperiment(file);
  return jsonDifferences(kept, fresh);
}

/**
 * Before resuming run `runId`: the file named on the command line, else the file the run came from when it is
 * still there, must resolve to the stored experiment. Throws a UserError listing the differences otherwise.
 * Returns a line for the log when there was nothing to compare with.
 */
export function checkResumeFile(runId: number, stored: ResolvedExperiment, file?: string): string | undefined {
  const path = file ?? stored.filePath;
  if (file === undefined && !existsSync(path)) return `run ${runId}: ${path} is gone; resuming the experiment the store kept`;
  let current: ResolvedExperiment;
  try {
    current = loadExperiment(path);
  } catch (error) {
    throw new UserError(
      `run ${runId}: ${path} no longer loads: ${messageOf(error)}`,
      `fix it, or resume the stored experiment with \`servelab run --resume ${runId} --use-stored\``,
      ExitCode.failure,
    );
  }
  const differences = experimentDifferences(stored, current);
  if (differences.length === 0) return undefined;
  const list = differences.map((difference) => `${difference.key}: ${difference.before} → ${difference.after}`);
  throw new UserError(
    `run ${runId}: ${path} changed since the run started (${list.length} ${list.length === 1 ? 'difference' : 'differences'}, stored → file): ${list.join('; ')}`,
    `restore ${path} as it was, resume the stored experiment with \`servelab run --resume ${runId} --use-stored\`, or start a new run with \`servelab run ${path}\``,
    ExitCode.failure,
  );
}
