import type { LevelResult } from '../../load/types.js';
import { type ValidityOptions as LevelValidityOptions, levelValidity } from '../analysis/trial-validity.js';

/** What, besides the level result itself, decides whether a trial counts. */
export interface ValidityOptions extends LevelValidityOptions {
  /** How the server ended during the trial ("server was killed by SIGKILL"), as the liveness watch saw it. */
  serverDeath?: string;
}

/**
 * Why a measured trial may not count, or undefined when it may. Pure: `level` is undefined when the load client
 * measured nothing. A dead server comes first; the level itself is judged by the rule `bench` uses too
 * (analysis/trial-validity.ts: failures, resends, token counts, early stops).
 */
export function invalidReason(level: LevelResult | undefined, options: ValidityOptions): string | undefined {
  if (options.serverDeath !== undefined) return `${options.serverDeath} during the trial`;
  if (!level) return 'the load client measured nothing';
  return levelValidity(level, options);
}
