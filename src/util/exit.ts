import { isUserError, messageOf } from './errors.js';
import { terminalText } from './terminal-text.js';

/** Exit codes shared by all commands, so scripts can tell failures apart. */
export const ExitCode = {
  ok: 0,
  failure: 1,
  usage: 2,
  timeout: 3,
  serverDied: 4,
  interrupted: 130,
} as const;

/** Print a failure as "cause" + "next step" on stderr and pick the exit code; stack traces only with SERVELAB_DEBUG. */
export function reportFailure(error: unknown): number {
  if (isUserError(error)) {
    process.stderr.write(terminalText(`servelab: ${error.message}\n  next: ${error.hint}\n`));
    return error.exitCode;
  }
  process.stderr.write(terminalText(`servelab: internal error: ${messageOf(error)}\n  next: rerun with SERVELAB_DEBUG=1 and report the stack trace\n`));
  if (process.env.SERVELAB_DEBUG) process.stderr.write(`${(error as Error)?.stack ?? ''}\n`);
  return ExitCode.failure;
}
