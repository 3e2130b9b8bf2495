/**
 * What every bench script shares: its flags read strictly, and its failure path. A bench that cannot produce its
 * figure says why in one line of cause and one of next step (src/util/exit.ts, as the CLI does) and exits non-zero;
 * a wrong flag is a usage error (exit 2). Never a stack trace, never a figure printed from a failed measurement.
 */
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { usageError } from '../../src/cli/commands/bench-flag-values.js';
import { type SimulatorProcess, spawnSimulator } from '../../src/simulate/child.js';
import { isUserError, UserError } from '../../src/util/errors.js';
import { ExitCode, reportFailure } from '../../src/util/exit.js';

export { positiveInt, positiveNumber, usageError } from '../../src/cli/commands/bench-flag-values.js';

/**
 * Run a bench's body. Success leaves the exit to the event loop, so a child or socket the bench forgot to close
 * shows up as a bench that does not end (the smoke test's time limit) rather than hiding behind process.exit; a
 * failure exits at once (each bench stops its children in `finally` before the error reaches here).
 */
export function benchMain(script: string, body: () => Promise<void>): void {
  body().then(
    () => {
      process.exitCode = ExitCode.ok;
    },
    (error: unknown) => {
      const named = isUserError(error) ? new UserError(`bench/${script}: ${error.message}`, error.hint, error.exitCode) : error;
      process.exit(reportFailure(named));
    },
  );
}

/** node:util parseArgs (strict: no positionals), whose errors (unknown flag, missing value) are usage errors naming the script. */
export function benchFlags<T extends Pick<ParseArgsConfig, 'options'>>(script: string, config: T): ReturnType<typeof parseArgs<T>>['values'] {
  try {
    return parseArgs(config).values;
  } catch (error) {
    throw usageError((error as Error).message, `see the flags in the header of bench/${script}.ts`);
  }
}

/** A figure the bench cannot compute from what it measured: exit 1 with the cause instead of printing it. */
export function noFigure(cause: string, next: string): UserError {
  return new UserError(cause, next, ExitCode.failure);
}

/** A flag whose zero is meaningful (no jitter, no drift). */
export function nonNegativeNumber(flag: string, text: string): number {
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value) || value < 0) throw usageError(`${flag} must be a number ≥ 0, got "${text}"`, `e.g. ${flag} 0`);
  return value;
}

/** A simulator child process that says it serves; stopped again when it never does. */
export async function readySimulator(flags: readonly string[]): Promise<SimulatorProcess> {
  const sim = await spawnSimulator([...flags]);
  try {
    await sim.waitForLine(/Uvicorn running on/, 60_000);
  } catch (error) {
    await sim.stop();
    throw error;
  }
  return sim;
}
