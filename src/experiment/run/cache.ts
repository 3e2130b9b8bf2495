import { request } from 'undici';
import type { ServerProfile } from '../../profiles/types.js';
import { messageOf, UserError } from '../../util/errors.js';
import { deriveSeed } from '../../util/random.js';
import { cacheResetUnknown } from '../spec/load.js';
import type { CacheMode } from '../spec/types.js';

// Longer than SGLang's ?timeout=30 wait for running requests to drain.
const RESET_TIMEOUT_MS = 45_000;

/** How one trial meets the server's prefix cache: what to do before and during it, and what the store records. */
export interface TrialCache {
  promptSalt?: number;
  /** POST this path before the trial. */
  resetPath?: string;
  cachePrompt?: false;
  /** e.g. "cold (salt N)", "warm", "reset (POST /flush_cache)". */
  record: string;
}

/** Where a trial sits in its run: everything that tells it apart from every other trial a server may have seen. */
export interface TrialPlace {
  runId: number;
  block: number;
  /** The trial's workload, by its index in the experiment (two workloads of one start send the same prompts). */
  workload: number;
  /** Repetition of the variant × workload pair (a blocked pass repeats it on one start). */
  repetition: number;
  /** The variant's place among those sharing its running server (0 for the first). */
  sharedIndex: number;
  /** 0 for the first measurement, 1 for its first re-run… */
  attempt: number;
}

/**
 * Cold trials get a salt of their own, from every coordinate of the trial but the variant on its own server: every
 * variant of a block sends identical prompts (a fair comparison), and no trial meets another's prompts — not one of
 * another block, another workload of the same start (each workload draws the same prompts from the client's seed),
 * another repetition of a blocked pass, nor its own failed attempt (a real llama-server found 97% of them cached).
 * Variants that share one running server (`sharedIndex` > 0 for all but the first) get salts of their own: identical
 * prompts would find the previous variant's cache there. A resumed run repeats its salts. Reset trials use the
 * profile's API instead.
 */
export function trialCache(mode: CacheMode, profile: ServerProfile, where: TrialPlace): TrialCache {
  if (mode === 'warm') return { record: 'warm' };
  if (mode === 'reset') {
    const reset = profile.cacheReset;
    if (!reset) throw cacheResetUnknown(profile.name);
    return reset.kind === 'endpoint'
      ? { resetPath: reset.path, record: `reset (POST ${reset.path})` }
      : { cachePrompt: false, record: 'reset (cache_prompt: false)' };
  }
  const first = [where.block, where.workload, where.repetition, where.sharedIndex].reduce(deriveSeed, where.runId);
  const promptSalt = where.attempt === 0 ? first : deriveSeed(first, -where.attempt);
  return { promptSalt, record: `cold (salt ${promptSalt})` };
}

/**
 * Why each engine's reset endpoint refuses, and what to do: keyed by the endpoint path (the profile's
 * `cacheReset.path` without its query), since the path is the engine's own API.
 */
const REFUSAL_HINTS: Record<string, string> = {
  '/reset_prefix_cache':
    'vLLM serves it only with VLLM_SERVER_DEV_MODE=1 in server.env, and resets only while no running request holds cache blocks: is another client sending? or use client.cache: cold',
  '/flush_cache':
    'SGLang flushes only while no request runs or waits, and they did not drain within its ?timeout=: is another client sending? or use client.cache: cold',
};
const GENERIC_HINT = 'check the server log, or use client.cache: cold';

/**
 * A 2xx answer that still says no: vLLM's /reset_prefix_cache answers 200 {"success": false} when blocks are held
 * (vllm/v1/core/sched/scheduler.py `reset_prefix_cache` returns False); bodies that are not JSON (SGLang's plain
 * text) say nothing more than their status. Pure.
 */
export function resetRefused(body: string): boolean {
  try {
    const json: unknown = JSON.parse(body);
    return typeof json === 'object' && json !== null && (json as Record<string, unknown>).success === false;
  } catch {
    return false;
  }
}

/** Empty the server's prefix cache; a refusal stops the run, since the trial would silently be warm. */
export async function resetCache(baseUrl: string, path: string): Promise<void> {
  const hint = REFUSAL_HINTS[path.split('?')[0]!] ?? GENERIC_HINT;
  let status: number;
  let body: string;
  try {
    const response = await request(`${baseUrl}${path}`, { method: 'POST', headersTimeout: RESET_TIMEOUT_MS, bodyTimeout: RESET_TIMEOUT_MS });
    status = response.statusCode;
    body = await response.body.text();
  } catch (error) {
    throw new UserError(`cache reset POST ${path} failed: ${messageOf(error)}`, GENERIC_HINT);
  }
  if (status < 200 || status >= 300) {
    const said = body.trim().split('\n')[0]?.slice(0, 160);
    throw new UserError(`the server refused the cache reset POST ${path} (HTTP ${status}${said ? `: ${said}` : ''}): the trial would run warm`, hint);
  }
  if (resetRefused(body)) {
    throw new UserError(`the server did not reset its cache on POST ${path} (it answered ${body.trim().slice(0, 80)}): the trial would run warm`, hint);
  }
}
