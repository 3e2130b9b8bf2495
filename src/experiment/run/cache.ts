import { request } from 'undici';
import type { ServerProfile } from '../../profiles/types.js';
import { messageOf, UserError } from '../../util/errors.js';
import { deriveSeed } from '../../util/random.js';
import { cacheResetUnknown } from '../spec/load.js';
import type { CacheMode } from '../spec/types.js';

const RESET_TIMEOUT_MS = 30_000;

/** How one trial meets the server's prefix cache: what to do before and during it, and what the store records. */
export interface TrialCache {
  promptSalt?: number;
  /** POST this path before the trial. */
  resetPath?: string;
  cachePrompt?: false;
  /** e.g. "cold (salt N)", "warm", "reset (POST /flush_cache)". */
  record: string;
}

/**
 * Cold trials get a salt of their run and block: every variant of a block sends identical prompts (a fair
 * comparison), no two blocks share a prefix (no cache hit crosses trials), and a resumed run repeats its salts.
 * Variants that share one running server (`sharedIndex` > 0 for all but the first) get salts of their own: identical
 * prompts would find the previous variant's cache there. Reset trials use the profile's API instead.
 */
export function trialCache(mode: CacheMode, profile: ServerProfile, runId: number, block: number, sharedIndex: number): TrialCache {
  if (mode === 'warm') return { record: 'warm' };
  if (mode === 'reset') {
    const reset = profile.cacheReset;
    if (!reset) throw cacheResetUnknown(profile.name);
    return reset.kind === 'endpoint'
      ? { resetPath: reset.path, record: `reset (POST ${reset.path})` }
      : { cachePrompt: false, record: 'reset (cache_prompt: false)' };
  }
  const promptSalt = deriveSeed(deriveSeed(runId, block), sharedIndex);
  return { promptSalt, record: `cold (salt ${promptSalt})` };
}

/** Empty the server's prefix cache; a refusal stops the run, since the trial would silently be warm. */
export async function resetCache(baseUrl: string, path: string): Promise<void> {
  let status: number;
  try {
    const response = await request(`${baseUrl}${path}`, { method: 'POST', headersTimeout: RESET_TIMEOUT_MS, bodyTimeout: RESET_TIMEOUT_MS });
    status = response.statusCode;
    await response.body.dump();
  } catch (error) {
    throw new UserError(`cache reset POST ${path} failed: ${messageOf(error)}`, 'check the server log, or use client.cache: cold');
  }
  if (status < 200 || status >= 300) {
    throw new UserError(
      `the server refused the cache reset POST ${path} (HTTP ${status})`,
      'vLLM serves it only with VLLM_SERVER_DEV_MODE=1 in server.env; or use client.cache: cold',
    );
  }
}
