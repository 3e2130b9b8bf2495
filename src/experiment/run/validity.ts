import type { LevelResult } from '../../load/types.js';
import { type ValidityOptions as LevelValidityOptions, levelValidity } from '../analysis/trial-validity.js';
import type { LoggedFatal } from './log-watch.js';

/** What, besides the level result itself, decides whether a trial counts. */
export interface ValidityOptions extends LevelValidityOptions {
  /** How the server ended during the trial ("server was killed by SIGKILL"), as the liveness watch saw it. */
  serverDeath?: string;
  /** The most specific fatal line the server logged during the trial (log-watch.ts). */
  loggedFatal?: LoggedFatal;
}

/**
 * Why a measured trial may not count, or undefined when it may. Pure: `level` is undefined when the load client
 * measured nothing. A dead server comes first (with the fatal line that explains it), then a fatal line in its log
 * (whatever the requests measured: a server that logged a CUDA error may answer, but not with a trusted number);
 * the level itself is judged by the rule `bench` uses too (analysis/trial-validity.ts: failures, resends, token
 * counts, early stops).
 */
export function invalidReason(level: LevelResult | undefined, options: ValidityOptions): string | undefined {
  const logged = options.loggedFatal && `${options.loggedFatal.name}: ${options.loggedFatal.line}`;
  if (options.serverDeath !== undefined) return `${options.serverDeath} during the trial${logged ? `; its log shows ${logged}` : ''}`;
  if (logged !== undefined) return `the server logged a fatal error during the trial (${logged})`;
  if (!level) return 'the load client measured nothing';
  return levelValidity(level, options);
}
