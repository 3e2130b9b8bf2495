import { statSync } from 'node:fs';
import { LogFollower } from '../../launch/log-follower.js';
import { StartupLog } from '../../profiles/startup-log.js';
import type { ServerProfile } from '../../profiles/types.js';
import { excerpt } from '../../ready/classify.js';
import { messageOf } from '../../util/errors.js';
import { redactor } from '../../util/redact.js';

/** Fallback read cadence; inotify usually hands a new line over within milliseconds. */
const POLL_MS = 250;
/**
 * After the first fatal line the more specific one follows (the exception after "Traceback"): the same settle time
 * as at launch (launch.ts FATAL_SETTLE_MS), so the reason names "CUDA error", not "Python exception".
 */
const SETTLE_MS = 500;
/** A quoted line stays one readable line of a message. */
const MAX_LINE_CHARS = 240;

/** The fatal line a server logged during a trial: the profile's name for it and the line, redacted and bounded. */
export interface LoggedFatal {
  name: string;
  line: string;
}

export interface LogWatch {
  /** Aborts at the first fatal line: pass it to the load client, so nothing more is fired into a broken server. */
  readonly signal: AbortSignal;
  /**
   * Stop following, after a last read (and the settle time, where a fatal line came just now); the most specific
   * fatal line seen, or undefined. Idempotent.
   */
  stop(): Promise<LoggedFatal | undefined>;
}

/**
 * Follow a server's log during a trial, from its current end, and read each new line with the profile's fatal
 * patterns (the ones a launch fails on: CUDA errors, NCCL errors, a Python traceback; benign NCCL lines are not
 * among them). Local launches write the log themselves; the SSH executor mirrors the host's log into it.
 */
export function watchServerLog(logPath: string, profile: ServerProfile, note: (line: string) => void): LogWatch {
  const controller = new AbortController();
  const reading = new StartupLog(profile);
  let firstFatalAt: number | undefined;
  let follower: LogFollower | undefined;
  try {
    follower = new LogFollower(
      logPath,
      statSync(logPath).size,
      (line) => {
        if (reading.accept(line)?.kind !== 'first-fatal') return;
        firstFatalAt = Date.now();
        controller.abort(`the server logged a fatal error: ${quote(line)}`);
      },
      { keepLines: 0, pollMs: POLL_MS },
    );
  } catch (error) {
    note(`cannot follow the server log ${logPath} (${messageOf(error)}): fatal lines during this trial are not watched`);
  }
  let stopping: Promise<LoggedFatal | undefined> | undefined;
  const finish = async (): Promise<LoggedFatal | undefined> => {
    if (firstFatalAt !== undefined) {
      const left = firstFatalAt + SETTLE_MS - Date.now();
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
    }
    // pump, not drain: the server still writes, and an unterminated line may be half of one.
    follower?.pump();
    follower?.close();
    const fatal = reading.fatal;
    return fatal && { name: fatal.name, line: quote(fatal.line) };
  };
  return { signal: controller.signal, stop: () => (stopping ??= finish()) };
}

function quote(line: string): string {
  return excerpt(redactor().text(line), MAX_LINE_CHARS);
}
