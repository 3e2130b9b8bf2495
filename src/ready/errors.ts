import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import type { NotReadyKind, PhaseTiming } from './types.js';

/** Exit code per failure kind, so scripts can tell "too slow" from "died" from "wrong URL". */
export function exitCodeFor(kind: NotReadyKind): number {
  switch (kind) {
    case 'timeout':
      return ExitCode.timeout;
    case 'process-exited':
    case 'fatal-log':
    case 'engine-dead':
      return ExitCode.serverDied;
    case 'aborted':
      return ExitCode.interrupted;
    case 'unreachable':
    case 'bad-response':
    case 'wrong-server':
      return ExitCode.failure;
  }
}

/** A wait that ended without a ready server; carries what is known so far for the message and the startup record. */
export class NotReadyError extends UserError {
  readonly kind: NotReadyKind;
  readonly logTail?: string[];
  readonly elapsedMs: number;
  readonly phases: PhaseTiming[];

  constructor(kind: NotReadyKind, message: string, hint: string, details: { elapsedMs: number; phases: PhaseTiming[]; logTail?: string[] }) {
    super(message, hint, exitCodeFor(kind));
    this.name = 'NotReadyError';
    this.kind = kind;
    this.elapsedMs = details.elapsedMs;
    this.phases = details.phases;
    if (details.logTail) this.logTail = details.logTail;
  }

  /** The same failure with the server's log tail attached (launch knows the log, the wait loop does not). */
  withLogTail(logTail: string[]): NotReadyError {
    return new NotReadyError(this.kind, this.message, this.hint, { elapsedMs: this.elapsedMs, phases: this.phases, logTail });
  }
}
