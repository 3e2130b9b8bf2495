import { levelValidity } from '../experiment/analysis/trial-validity.js';
import type { BenchResult, ClientOptions } from '../load/types.js';
import { DEFAULT_MAX_FAILED_FRACTION } from '../util/defaults.js';
import { ExitCode } from '../util/exit.js';

/** Names of bench's flags in validity messages. */
const FLAG_NAMES = {
  requireFullOutput: '--no-require-full-output',
  tokenCounts: '--token-counts',
  tokenizer: '--tokenizer',
  maxFailedFraction: '--max-failed-fraction',
};

/** Exit status and, for a failure, the line saying why and what to do. */
export function verdictOf(result: BenchResult, serverDeath: string | undefined, options: ClientOptions): { code: number; message?: string } {
  if (serverDeath !== undefined) {
    return {
      code: ExitCode.serverDied,
      message: `${serverDeath}; the benchmark was stopped and its figures are incomplete\n  next: check the server log, restart the server and run again`,
    };
  }
  if (result.interrupted) return { code: ExitCode.interrupted };
  const completed = result.levels.reduce((sum, level) => sum + level.completed, 0);
  const noOutput = result.levels.reduce((sum, level) => sum + (level.errorsByKind['no-output'] ?? 0), 0);
  if (completed === 0 && noOutput > 0)
    return {
      code: ExitCode.failure,
      message: `the server generated no output tokens for ${noOutput} requests: nothing was measured\n  next: check the server log, the prompt and --output-len (a model that stops at once needs ignore_eos)`,
    };
  if (completed === 0)
    return {
      code: ExitCode.failure,
      message: 'every measured request failed (see the error counts above)\n  next: check the server log and the --backend / --model flags',
    };
  const validity = { ignoreEos: options.ignoreEos, maxFailedFraction: options.maxFailedFraction ?? DEFAULT_MAX_FAILED_FRACTION, names: FLAG_NAMES };
  // A capacity search's steps above its capacity may fail requests: that is how they missed; the level standing for it is judged.
  const capacity = result.levels.find((level) => level.capacity);
  for (const level of capacity ? [capacity] : result.levels) {
    const invalid = levelValidity(level, { ...validity, ...(options.requireFullOutput !== undefined && { requireFullOutput: options.requireFullOutput }) });
    if (invalid !== undefined) {
      return {
        code: ExitCode.failure,
        message: `${level.label}: ${invalid}: these figures are not a valid measurement\n  next: fix the cause (server log, the lines above), or accept it (--allow-failures, --max-failed-fraction, --no-require-full-output, --token-counts)`,
      };
    }
  }
  return { code: ExitCode.ok };
}
