import { lineTimeMs } from './log-time.js';
import { type FatalLine, StartupLog } from './startup-log.js';
import type { ServerProfile } from './types.js';

export interface ReplayedPhase {
  name: string;
  /** 1-based line number in the file. */
  lineNumber: number;
  /** The line's time (log-time.ts scale), or that of the last timed line before it (progress bars carry none). */
  atMs?: number;
}

export interface LogReplay {
  phases: ReplayedPhase[];
  fatal?: FatalLine & { lineNumber: number };
  /** Engine versions the log itself prints, keyed like the fingerprint's packages (e.g. { vllm: '0.14.1' }). */
  versions: Record<string, string>;
}

/** Version lines: vLLM's api_server.py "vLLM API server version X" (newer "vLLM server version X") and core.py "(vX)". */
const VERSION_LINES: Array<[string, RegExp]> = [['vllm', /vLLM (?:API )?server version v?(\S+)|Initializing a V\d LLM engine \(v([^)\s]+)\)/]];

/** `servelab launch` appends to its log; each launch starts with this line, and only the last launch is replayed. */
const LAUNCH_MARK = /^--- servelab launch /;

/** A whole server log read as `launch` reads it live (StartupLog): the phases in order and the cause it would report. */
export function replayLog(profile: ServerProfile, lines: readonly string[]): LogReplay {
  const lastLaunch = lines.findLastIndex((line) => LAUNCH_MARK.test(line));
  const reading = new StartupLog(profile);
  const phases: ReplayedPhase[] = [];
  const versions: Record<string, string> = {};
  let fatal: LogReplay['fatal'];
  let lastTimeMs: number | undefined;
  for (let index = lastLaunch + 1; index < lines.length; index++) {
    const line = lines[index]!;
    const before = reading.fatal;
    const change = reading.accept(line);
    lastTimeMs = lineTimeMs(line) ?? lastTimeMs;
    if (change?.kind === 'phase' && !phases.some((phase) => phase.name === change.name)) {
      phases.push({ name: change.name, lineNumber: index + 1, ...(lastTimeMs !== undefined && { atMs: lastTimeMs }) });
    }
    if (reading.fatal !== before) fatal = { ...reading.fatal!, lineNumber: index + 1 };
    for (const [engine, pattern] of VERSION_LINES) {
      const match = pattern.exec(line);
      const version = match?.[1] ?? match?.[2];
      if (version && !versions[engine]) versions[engine] = version;
    }
  }
  return { phases, ...(fatal && { fatal }), versions };
}
