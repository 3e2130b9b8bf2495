/**
 * The warm-up a run sends before measuring: which requests, at what concurrency or rate, before which level. A
 * server's first batches of a new size are slower than later ones (kernels compiled or autotuned per shape on first
 * use: sglang#18244, vllm#37188), so a level warmed at another concurrency measures that warm-up. Pure.
 */
import { UserError } from '../util/errors.js';
import { type LevelPlan, maxInFlight } from './level.js';
import type { RequestOutcome } from './request.js';
import type { ClientOptions } from './types.js';

/** Level label of the warm-up requests' progress updates (not measured, so never a trial's counts). */
export const WARMUP_LABEL = 'warmup';

/** A duration warm-up stops after this many rounds even if its time is not up: a bounded loop. */
export const MAX_WARMUP_ROUNDS = 10_000;

export interface WarmupStep {
  /** Sent right before this level. */
  beforeLevel: number;
  /** One round: its requests, concurrency or rate (prompts: its own `requests` of them, reused by every round). */
  plan: LevelPlan;
  /** Rounds repeat until this long has passed; absent: one round. */
  durationMs?: number;
}

type WarmupSettings = Pick<ClientOptions, 'warmupRequests' | 'warmupMs' | 'warmupPerLevel'>;

/**
 * Per level (warmupPerLevel): at the level's own concurrency (at least one request per slot, so the batch reaches
 * the level's size) or rate (at least a second of its arrivals); a trace's level as one stream (warmWidth). Otherwise one warm-up before the first level, at
 * most as many in flight as that level. Either way at least one request per load worker: each worker's first
 * requests are cold too (JIT, connections).
 */
export function planWarmups(settings: WarmupSettings, levels: readonly LevelPlan[], workerCount: number): WarmupStep[] {
  const asked = settings.warmupMs !== undefined ? 0 : settings.warmupRequests;
  if (settings.warmupMs === undefined && asked <= 0) return [];
  const perWorker = workerCount > 1 ? workerCount : 0;
  const duration = settings.warmupMs !== undefined && { durationMs: settings.warmupMs };
  if (!settings.warmupPerLevel) {
    const inFlight = Math.max(workerCount, warmWidth(levels[0]!));
    const requests = settings.warmupMs !== undefined ? inFlight : Math.max(asked, perWorker);
    return [{ beforeLevel: 0, plan: { label: WARMUP_LABEL, requests, concurrency: Math.min(requests, inFlight) }, ...duration }];
  }
  return levels.map((level, beforeLevel) => {
    const least = level.rate ? Math.ceil(level.rate.requestsPerSecond) : warmWidth(level);
    const requests = Math.max(asked, least, perWorker);
    const plan: LevelPlan = level.rate
      ? { label: WARMUP_LABEL, requests, rate: level.rate }
      : { label: WARMUP_LABEL, requests, concurrency: Math.max(workerCount, level.concurrency ?? 1) };
    return { beforeLevel, plan, ...duration };
  });
}

/**
 * Requests in flight that warm a level: its concurrency or cap. A trace's cap (256 by default) bounds a burst and is
 * no load of its own: one request per slot of it, one at a time, warmed for 40 s before a 1.5 s trace, whatever
 * --warmup said; it is warmed like one stream (and one per load worker).
 */
function warmWidth(level: LevelPlan): number {
  return level.replay ? 1 : maxInFlight(level);
}

/** Prompts the warm-up uses: they follow the measured ones, so a warm-up never sends a measured prompt. */
export function warmupPromptCount(steps: readonly WarmupStep[]): number {
  return steps.reduce((total, step) => total + step.plan.requests, 0);
}

/**
 * Only set-up mistakes stop the run at the warm-up (wrong API, path or model, server gone): every request failed
 * with a 4xx or could not connect. 5xx, stalls and broken streams are server behaviour the measurement reports.
 */
export function warmupSetupFailure(outcomes: readonly RequestOutcome[], baseUrl: string, backend: string): UserError | undefined {
  const failures = outcomes.filter((outcome) => outcome.sample.error?.kind === 'http-4xx' || outcome.sample.error?.kind === 'connection');
  if (failures.length === 0 || failures.length < outcomes.length) return undefined;
  const error = failures[0]!.sample.error!;
  return new UserError(
    `all ${failures.length} warm-up request(s) to ${baseUrl} failed: ${error.kind}: ${error.message}`,
    `check that the server speaks the ${backend} API (--backend) and serves the model (--model)`,
  );
}
