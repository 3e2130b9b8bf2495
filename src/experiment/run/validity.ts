import type { LevelResult } from '../../load/types.js';

/** What, besides the level result itself, decides whether a trial counts. */
export interface ValidityOptions {
  /** `validity.maxFailedFraction` of the experiment (default 0). */
  maxFailedFraction: number;
  /** How the server ended during the trial ("server was killed by SIGKILL"), as the liveness watch saw it. */
  serverDeath?: string;
}

/**
 * Why a measured trial may not count, or undefined when it may. Pure: `level` is undefined when the load client
 * measured nothing. Each rule is one line here, in the order the user should hear them.
 */
export function invalidReason(level: LevelResult | undefined, options: ValidityOptions): string | undefined {
  if (options.serverDeath !== undefined) return `${options.serverDeath} during the trial`;
  if (!level) return 'the load client measured nothing';
  const total = level.completed + level.failed;
  if (level.completed === 0) return `all ${total} requests failed${firstError(level)}`;
  if (level.failed / total <= options.maxFailedFraction) return undefined;
  return `${level.failed} of ${total} requests failed (maxFailedFraction ${options.maxFailedFraction})${firstError(level)}`;
}

function firstError(level: LevelResult): string {
  const error = level.samples.find((sample) => sample.error)?.error;
  return error ? `; first: ${error.kind}: ${error.message}` : '';
}
