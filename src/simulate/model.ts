/**
 * The simulator's performance model, free of I/O. The server draws its timings from the `sample*` functions;
 * tests and benchmarks derive their expectations from the `expected*` functions instead of hard-coding numbers.
 */

import { type Random, standardNormal } from '../util/random.js';
import type { SimConfig } from './config.js';

export type EnvLookup = Record<string, string | undefined>;

/** Slowdown of every step when `active` requests share the batch (1 for a lone request). */
export function batchFactor(config: SimConfig, active: number): number {
  return 1 + config.decode.concurrencySlowdown * (Math.max(1, active) - 1);
}

/** Product of the factors of every envSpeedups entry whose variable has the given value in `env`. */
export function envSpeedup(config: SimConfig, env: EnvLookup): number {
  let speedup = 1;
  for (const entry of config.envSpeedups) {
    if (env[entry.name] === entry.value) speedup *= entry.factor;
  }
  return speedup;
}

export function expectedTtftMs(config: SimConfig, inputTokens: number, active = 1): number {
  const { ttftBaseMs, prefillMsPerToken } = config.decode;
  return (ttftBaseMs + prefillMsPerToken * inputTokens) * batchFactor(config, active);
}

/**
 * The target model's forward of one step (decode, or verification of the drafts): what tuned NCCL speeds up. Each
 * draft token adds `draftOverhead` of a step whatever the batch, and `verifyBatchCost` per running request.
 */
export function expectedVerifyMs(config: SimConfig, active = 1, env: EnvLookup = {}): number {
  const { tpotMs, spec } = config.decode;
  const batchWork = spec.verifyBatchCost * Math.max(1, active) * spec.draftTokens;
  return (tpotMs * (batchFactor(config, active) * (1 + spec.draftOverhead * spec.draftTokens) + batchWork)) / envSpeedup(config, env);
}

/** The draft model's steps before a verification, every step run even where the tree is shallower (0 with spec off). */
export function expectedDraftMs(config: SimConfig, active = 1): number {
  const { tpotMs, spec } = config.decode;
  return spec.draftTokens === 0 ? 0 : tpotMs * batchFactor(config, active) * spec.draftStepCost * (spec.steps ?? spec.draftTokens);
}

/** One decode (or, with spec on, one draft + verification) step. */
export function expectedStepMs(config: SimConfig, active = 1, env: EnvLookup = {}): number {
  return expectedVerifyMs(config, active, env) + expectedDraftMs(config, active);
}

/** Depth of the draft tree: the draft steps, at most the drafts (0 with spec off). */
export function draftDepth(config: SimConfig): number {
  const { draftTokens, steps } = config.decode.spec;
  return Math.min(steps ?? draftTokens, draftTokens);
}

/** Candidates at each depth: one chain, the remaining drafts as alternatives at the shallowest depths, topk at most. */
export function levelCandidates(config: SimConfig): number[] {
  const { draftTokens, topk } = config.decode.spec;
  const depth = draftDepth(config);
  let extra = draftTokens - depth;
  return Array.from({ length: depth }, () => {
    const alternatives = Math.min(topk - 1, extra);
    extra -= alternatives;
    return 1 + alternatives;
  });
}

/** Chance that depth i (0-based) holds an accepted token, given every depth before it did. */
function levelAcceptance(config: SimConfig): number[] {
  const { acceptance: p, acceptanceDecay } = config.decode.spec;
  return levelCandidates(config).map((candidates, depth) => 1 - (1 - p * acceptanceDecay ** depth) ** candidates);
}

/** Mean tokens emitted per step: accepted draft run + 1 bonus token; for a chain of k, (1 - p^(k+1)) / (1 - p). */
export function expectedTokensPerStep(config: SimConfig): number {
  let reach = 1;
  let tokens = 1;
  for (const chance of levelAcceptance(config)) {
    reach *= chance;
    tokens += reach;
  }
  return tokens;
}

/** Accepted draft tokens / proposed draft tokens, in expectation (undefined with spec off). */
export function expectedAcceptanceRate(config: SimConfig): number | undefined {
  const k = config.decode.spec.draftTokens;
  return k === 0 ? undefined : (expectedTokensPerStep(config) - 1) / k;
}

/** Mean time per output token after the first, ignoring the partial last step. */
export function expectedTpotMs(config: SimConfig, active = 1, env: EnvLookup = {}): number {
  return expectedStepMs(config, active, env) / expectedTokensPerStep(config);
}

/**
 * Output tokens per second of `concurrency` requests decoding together, steady state (prefill and queueing left
 * out): the response a search over speculative settings measures, and bench/search-cost.ts's truth.
 */
export function expectedDecodeTokensPerSecond(config: SimConfig, concurrency: number, env: EnvLookup = {}): number {
  return (concurrency * 1000) / expectedTpotMs(config, concurrency, env);
}

/** Expected end-to-end latency of a request that produces exactly `outputTokens` (first token comes from prefill). */
export function expectedE2eMs(config: SimConfig, inputTokens: number, outputTokens: number, active = 1, env: EnvLookup = {}): number {
  return expectedTtftMs(config, inputTokens, active) + Math.max(0, outputTokens - 1) * expectedTpotMs(config, active, env);
}

/** Step-time multiplier of the machine drift `elapsedMs` after its origin (never below 0.1: a drift, not a stop). */
export function driftFactor(config: SimConfig, elapsedMs: number): number {
  return Math.max(0.1, 1 + (config.decode.drift.pctPerMin / 100) * (elapsedMs / 60_000));
}

/** Mean-1 lognormal multiplier whose coefficient of variation is `jitter`. */
export function sampleJitter(jitter: number, rng: Random): number {
  if (jitter === 0) return 1;
  const sigma = Math.sqrt(Math.log(1 + jitter * jitter));
  return Math.exp(sigma * standardNormal(rng) - (sigma * sigma) / 2);
}

export function sampleTtftMs(config: SimConfig, inputTokens: number, active: number, rng: Random): number {
  return expectedTtftMs(config, inputTokens, active) * sampleJitter(config.decode.jitter, rng);
}

/** `speedup` (env tuning and drift) divides the target's forward; the draft model's steps only drift. */
export function sampleStepMs(config: SimConfig, active: number, speedup: number, rng: Random, drift = 1): number {
  return (expectedVerifyMs(config, active) / speedup + expectedDraftMs(config, active) * drift) * sampleJitter(config.decode.jitter, rng);
}

/** Draft tokens accepted in one verification step: the leading run of depths where a candidate was right. */
export function sampleAcceptedDrafts(config: SimConfig, rng: Random): number {
  let accepted = 0;
  for (const chance of levelAcceptance(config)) {
    if (rng() >= chance) break;
    accepted += 1;
  }
  return accepted;
}
