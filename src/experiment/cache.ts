import { deriveSeed } from '../util/random.js';
import type { CacheMode } from './types.js';

/** How one trial meets the server's prefix cache: the prompt salt to send, and what the store records. */
export interface TrialCache {
  promptSalt?: number;
  /** "cold (salt N)" or "warm". */
  record: string;
}

/**
 * Cold trials get a salt of their run and block: every variant of a block sends identical prompts (a fair
 * comparison), no two blocks share a prefix (no cache hit crosses trials), and a resumed run repeats its salts.
 * Variants that share one running server (`sharedIndex` > 0 for all but the first) get salts of their own: identical
 * prompts would find the previous variant's cache there.
 */
export function trialCache(mode: CacheMode, runId: number, block: number, sharedIndex: number): TrialCache {
  if (mode === 'warm') return { record: 'warm' };
  const promptSalt = deriveSeed(deriveSeed(runId, block), sharedIndex);
  return { promptSalt, record: `cold (salt ${promptSalt})` };
}
