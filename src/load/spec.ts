import { type Dispatcher, request } from 'undici';
import { parsePrometheusByLabel, parsePrometheusTotals } from '../metrics/prometheus.js';
import type { StreamState } from './backends.js';
import { closedUnderUs } from './connections.js';
import type { RequestSample, SpecDecodeStats } from './types.js';

/**
 * Speculative-decoding statistics of one level, from the best source available:
 * 1. per-request counters in the responses (llama.cpp `timings.draft_n[_accepted]`; SGLang's native meta_info on the
 *    final chunk: `spec_verify_ct` and the correct/proposed drafts under each version's names, see backends.ts
 *    SGLANG_DRAFT_KEYS; vLLM's with --per-request-spec-decode-metrics, see readVllmSpecMetrics);
 * 2. Prometheus counters in vLLM's schema (`vllm:spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total`, and
 *    `…_accepted_tokens_per_pos_total{position}` where the engine has it; llama-server exports the same under
 *    `llamacpp:`, the simulator under `vllm:`), or SGLang's (below), as the delta between a scrape before and after
 *    the level, whatever backend sent the load; with per-request counters too, the counters add what those lack
 *    (accepted length, per-position acceptance);
 * 3. SGLang `/server_info` `avg_spec_accept_length`: a server-wide running mean of the first data-parallel rank,
 *    restarted by every /flush_cache, not per level (the last resort).
 *
 * One definition for every engine, SGLang's scheduler's (python/sglang/srt/managers/scheduler_metrics_mixin.py
 * `update_spec_metrics`: accept tokens += correct drafts + batch size, per verify step): mean accepted length =
 * (accepted drafts + verify steps) / verify steps, the bonus token included, which is vLLM's 1 + accepted / drafts;
 * acceptance rate = accepted drafts / proposed drafts.
 */

/**
 * Engines exporting vLLM's counter schema: vLLM itself, and llama-server with `--metrics` (ggml-org/llama.cpp#26389
 * renders them under `llamacpp:`; accepted with or without the `_total` suffix, which exporters add differently).
 */
const COUNTER_PREFIXES = ['vllm', 'llamacpp'] as const;

export interface SpecCounters {
  /** Whose counters: the metric-name prefix they were read under. */
  engine: (typeof COUNTER_PREFIXES)[number] | 'sglang';
  /** Verification steps. */
  drafts: number;
  /** Proposed draft tokens; unknown for SGLang when its draft length could not be read. */
  draftTokens?: number;
  acceptedTokens: number;
  /** Accepted tokens by draft position (0 = first), when the engine exports them. */
  acceptedPerPosition?: number[];
  /** SGLang's adaptive tier in force at the scrape (see sglangTier). */
  tier?: SpecTier;
}

export interface SpecTier {
  numSteps: number;
  numDraftTokens: number;
}

/** The first sample of a gauge (one per rank: the tier is switched for all ranks at once), or undefined. */
function firstSample(text: string, name: string): number | undefined {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, 'm').exec(text);
  const value = match ? Number(match[1]) : Number.NaN;
  return Number.isFinite(value) ? value : undefined;
}

/**
 * SGLang's adaptive speculative decoding tier in force: gauges `sglang:spec_num_steps` and
 * `sglang:spec_num_draft_tokens` (sgl-project/sglang#25940, for --speculative-adaptive, sglang#21599), or undefined
 * on a server without them. Pure.
 */
export function sglangTier(text: string): SpecTier | undefined {
  const numSteps = firstSample(text, 'sglang:spec_num_steps');
  const numDraftTokens = firstSample(text, 'sglang:spec_num_draft_tokens');
  return numSteps === undefined || numDraftTokens === undefined ? undefined : { numSteps, numDraftTokens };
}

/**
 * SGLang's counters (python/sglang/srt/metrics/collector.py, moved as each request finishes): verify steps
 * `spec_verify_calls_total`, and output tokens and requests, whose difference less the verify steps is the accepted
 * drafts (each request's first token comes from its prefill, each verify step adds its accepted drafts + 1). The
 * proposed drafts are verify steps x (speculative_num_draft_tokens - 1), SGLang's own per-request count, when the
 * draft length is known.
 */
function sglangCounters(totals: Map<string, number>, numDraftTokens: number | undefined): SpecCounters | undefined {
  const verify = totals.get('sglang:spec_verify_calls_total');
  const output = totals.get('sglang:generation_tokens_total');
  const requests = totals.get('sglang:num_requests_total');
  if (verify === undefined || output === undefined || requests === undefined) return undefined;
  const perStep = numDraftTokens === undefined ? undefined : numDraftTokens - 1;
  return {
    engine: 'sglang',
    drafts: verify,
    acceptedTokens: output - requests - verify,
    ...(perStep !== undefined && perStep > 0 && { draftTokens: verify * perStep }),
  };
}

/** Whether a scrape has SGLang's speculative counters (the draft length must then be asked of /server_info). Pure. */
export function hasSglangSpecCounters(text: string): boolean {
  return /^sglang:spec_verify_calls_total\b/m.test(text);
}

/**
 * The spec-decode counters of one scrape (the first engine prefix that has them), or undefined. `numDraftTokens`:
 * SGLang's speculative_num_draft_tokens, when known. Pure.
 */
export function specCountersFromMetrics(text: string, numDraftTokens?: number): SpecCounters | undefined {
  const totals = parsePrometheusTotals(text);
  const sglang = sglangCounters(totals, numDraftTokens);
  const tier = sglang && sglangTier(text);
  if (sglang) return tier ? { ...sglang, tier } : sglang;
  for (const engine of COUNTER_PREFIXES) {
    const counter = (name: string): number | undefined => totals.get(`${engine}:spec_decode_${name}_total`) ?? totals.get(`${engine}:spec_decode_${name}`);
    const draftTokens = counter('num_draft_tokens');
    const acceptedTokens = counter('num_accepted_tokens');
    if (draftTokens === undefined || acceptedTokens === undefined) continue;
    const perPosition = acceptedPerPosition(text, engine);
    return { engine, drafts: counter('num_drafts') ?? 0, draftTokens, acceptedTokens, ...(perPosition && { acceptedPerPosition: perPosition }) };
  }
  return undefined;
}

/** The per-position counter as an array indexed by position, or undefined when absent or with gaps. */
function acceptedPerPosition(text: string, engine: string): number[] | undefined {
  const name = `${engine}:spec_decode_num_accepted_tokens_per_pos`;
  let byLabel = parsePrometheusByLabel(text, `${name}_total`, 'position');
  if (byLabel.size === 0) byLabel = parsePrometheusByLabel(text, name, 'position');
  const values = Array.from({ length: byLabel.size }, (_, position) => byLabel.get(String(position)));
  return values.length > 0 && values.every((value) => value !== undefined) ? (values as number[]) : undefined;
}

/** A GET, sent once more when the server had closed the kept-alive connection under it (llama-server does). */
async function getText(dispatcher: Dispatcher, url: string, timeoutMs: number, retried = false): Promise<string | undefined> {
  try {
    const response = await request(url, { dispatcher, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const text = await response.body.text();
    return response.statusCode === 200 ? text : undefined;
  } catch (error) {
    return !retried && closedUnderUs(error) ? getText(dispatcher, url, timeoutMs, true) : undefined;
  }
}

/** Server args of SGLang (`/server_info`, formerly `/get_server_info`), or undefined. */
async function sglangServerInfo(dispatcher: Dispatcher, baseUrl: string, timeoutMs: number): Promise<Record<string, unknown> | undefined> {
  const text = (await getText(dispatcher, `${baseUrl}/server_info`, timeoutMs)) ?? (await getText(dispatcher, `${baseUrl}/get_server_info`, timeoutMs));
  if (!text) return undefined;
  try {
    const info: unknown = JSON.parse(text);
    return typeof info === 'object' && info !== null ? (info as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** Spec-decode counters from `/metrics` (vLLM, llama.cpp or SGLang names), or undefined when the server has none. */
export async function scrapeSpecCounters(dispatcher: Dispatcher, baseUrl: string, timeoutMs = 5000): Promise<SpecCounters | undefined> {
  const text = await getText(dispatcher, `${baseUrl}/metrics`, timeoutMs);
  if (!text) return undefined;
  if (!hasSglangSpecCounters(text)) return specCountersFromMetrics(text);
  const numDraftTokens = (await sglangServerInfo(dispatcher, baseUrl, timeoutMs))?.speculative_num_draft_tokens;
  return specCountersFromMetrics(text, typeof numDraftTokens === 'number' ? numDraftTokens : undefined);
}

/** What a level's counter delta was read from, for the stats' `source`. */
export function counterSource(counters: SpecCounters): string {
  return counters.engine === 'sglang'
    ? 'sglang prometheus counters (delta over the level: spec_verify_calls, generation_tokens - num_requests)'
    : `${counters.engine} prometheus spec_decode counters (delta over the level)`;
}

/**
 * Stats from the counter delta of a level; mean accepted length = 1 + accepted / drafts (bonus token included);
 * acceptance at position i = drafts whose i-th token was accepted / drafts.
 */
export function specFromCounterDelta(before: SpecCounters, after: SpecCounters, source: string): SpecDecodeStats | undefined {
  const acceptedTokens = after.acceptedTokens - before.acceptedTokens;
  const drafts = after.drafts - before.drafts;
  const draftTokens = after.draftTokens !== undefined && before.draftTokens !== undefined ? after.draftTokens - before.draftTokens : undefined;
  if (draftTokens === undefined ? drafts <= 0 : draftTokens <= 0) return undefined;
  const stats: SpecDecodeStats = { source, acceptedTokens, ...(drafts > 0 && { verifySteps: drafts }) };
  if (draftTokens !== undefined) Object.assign(stats, { acceptanceRate: acceptedTokens / draftTokens, draftTokens });
  if (drafts > 0) stats.meanAcceptedLength = 1 + acceptedTokens / drafts;
  const [first, last] = [before.acceptedPerPosition, after.acceptedPerPosition];
  if (drafts > 0 && last) stats.acceptanceByPosition = last.map((value, position) => (value - (first?.[position] ?? 0)) / drafts);
  return stats;
}

/** Stats from per-request counters of completed requests, or undefined when no response carried any. */
export function specFromResponses(states: readonly StreamState[]): SpecDecodeStats | undefined {
  let draftTokens = 0;
  let acceptedTokens = 0;
  let verifySteps = 0;
  /** Accepted drafts + verify steps of the SGLang requests: the numerator of the accepted length. */
  let verifiedTokens = 0;
  let haveDraft = false;
  let correctDrafts = false;
  const engines = new Set<string>();
  for (const state of states) {
    if (state.specDraftTokens !== undefined && state.specAcceptedTokens !== undefined) {
      haveDraft = true;
      draftTokens += state.specDraftTokens;
      acceptedTokens += state.specAcceptedTokens;
    }
    const steps = state.specVerifySteps;
    if (steps === undefined || steps <= 0) continue;
    if (state.specEngine) engines.add(state.specEngine);
    if (state.specAcceptedTokens !== undefined) {
      correctDrafts = true;
      verifySteps += steps;
      verifiedTokens += state.specAcceptedTokens + steps;
    } else if (state.completionTokens !== undefined) {
      // An SGLang that sends no draft counts: every output token but the prefill's came from a verify step.
      verifySteps += steps;
      verifiedTokens += state.completionTokens - 1;
    }
  }
  if (verifySteps > 0) {
    const meanAcceptedLength = verifiedTokens / verifySteps;
    if (!correctDrafts) return { source: 'sglang meta_info ((completion_tokens - 1) / spec_verify_ct)', meanAcceptedLength, verifySteps };
    return {
      source: engines.has('vllm')
        ? 'vllm per-request metrics.speculative_decoding (num_accepted_draft_tokens, num_draft_tokens, num_spec_steps)'
        : 'sglang meta_info (correct drafts, proposed drafts, spec_verify_ct)',
      meanAcceptedLength,
      verifySteps,
      ...(haveDraft && draftTokens > 0 && { acceptanceRate: acceptedTokens / draftTokens, draftTokens }),
      acceptedTokens,
    };
  }
  if (haveDraft && draftTokens > 0) {
    const stats: SpecDecodeStats = {
      source: 'llama.cpp timings (draft_n, draft_n_accepted)',
      acceptanceRate: acceptedTokens / draftTokens,
      draftTokens,
      acceptedTokens,
    };
    const steps = llamaTargetSteps(states);
    return steps === undefined ? stats : { ...stats, source: `${stats.source}, steps = tokens - 1 - accepted`, ...steps };
  }
  return undefined;
}

/**
 * llama.cpp counts drafted and accepted tokens, not steps; but each target forward of its decode loop yields the
 * drafts it accepted plus one token of its own, and the first token comes from the prompt's pass (llama.cpp
 * tools/server/server-context.cpp:3964, n_draft_accepted += n_accepted once per verify; the timings JSON,
 * server-common.cpp:81, shows draft_n/draft_n_accepted but not the step count). So a request's target steps are
 * completion tokens - 1 - accepted drafts, plain steps (no draft) included. Undefined unless every drafting request
 * reported its completion tokens.
 */
function llamaTargetSteps(states: readonly StreamState[]): { verifySteps: number; meanAcceptedLength: number } | undefined {
  let verifySteps = 0;
  let verifiedTokens = 0;
  for (const state of states) {
    if (state.specDraftTokens === undefined || state.specAcceptedTokens === undefined) continue;
    if (state.completionTokens === undefined) return undefined;
    const steps = state.completionTokens - 1 - state.specAcceptedTokens;
    if (steps <= 0) continue;
    verifySteps += steps;
    verifiedTokens += state.completionTokens - 1;
  }
  return verifySteps > 0 ? { verifySteps, meanAcceptedLength: verifiedTokens / verifySteps } : undefined;
}

/**
 * The stats with `verifyStepMs`: the decode time (e2e - TTFT) of the completed requests over the verify steps the
 * stats counted. Per-request counters (SGLang meta_info) cover exactly those requests; a counter delta covers what
 * finished during the level, the same requests when none failed; llama.cpp's steps are derived from its token
 * counts (llamaTargetSteps). Unchanged without verify steps. Pure.
 */
export function withVerifyStepTime(stats: SpecDecodeStats, samples: readonly RequestSample[]): SpecDecodeStats {
  if (stats.verifySteps === undefined || stats.verifySteps <= 0) return stats;
  let decodeMs = 0;
  for (const sample of samples) {
    if (!sample.error && sample.e2eMs !== undefined && sample.ttftMs !== undefined) decodeMs += sample.e2eMs - sample.ttftMs;
  }
  return decodeMs > 0 ? { ...stats, verifyStepMs: decodeMs / stats.verifySteps } : stats;
}

/**
 * SGLang's server-wide average accept length (newer versions nest it under internal_states, one per data-parallel
 * rank: only the first is read); a running mean since start or the last /flush_cache, not the level's.
 */
export async function scrapeSglangServerInfo(dispatcher: Dispatcher, baseUrl: string, timeoutMs = 5000): Promise<SpecDecodeStats | undefined> {
  const info = (await sglangServerInfo(dispatcher, baseUrl, timeoutMs)) as
    | { avg_spec_accept_length?: number; internal_states?: Array<{ avg_spec_accept_length?: number }> }
    | undefined;
  const value = info?.internal_states?.[0]?.avg_spec_accept_length ?? info?.avg_spec_accept_length;
  return typeof value === 'number' && value > 0
    ? { source: 'sglang /server_info avg_spec_accept_length (server-wide running mean, first DP rank, since the last flush)', meanAcceptedLength: value }
    : undefined;
}
