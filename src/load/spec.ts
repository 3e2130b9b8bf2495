import { type Dispatcher, request } from 'undici';
import { parsePrometheusByLabel, parsePrometheusTotals } from '../metrics/prometheus.js';
import type { StreamState } from './backends.js';
import { closedUnderUs } from './request.js';
import type { SpecDecodeStats } from './types.js';

/**
 * Speculative-decoding statistics of one level, from the best source available:
 * 1. per-request counters in the responses (llama.cpp `timings.draft_n[_accepted]`, SGLang `meta_info.spec_verify_ct`);
 * 2. Prometheus counters in vLLM's schema (`vllm:spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total`, and
 *    `…_accepted_tokens_per_pos_total{position}` where the engine has it; llama-server exports the same under
 *    `llamacpp:`, the simulator under `vllm:`), as the delta between a scrape before and after the level; with
 *    per-request counters too, the counters add what those lack (accepted length, per-position acceptance);
 * 3. SGLang `/get_server_info` `avg_spec_accept_length` (a server-wide running mean, not per level).
 */

/**
 * Engines exporting vLLM's counter schema: vLLM itself, and llama-server with `--metrics` (ggml-org/llama.cpp#26389
 * renders them under `llamacpp:`; accepted with or without the `_total` suffix, which exporters add differently).
 */
const COUNTER_PREFIXES = ['vllm', 'llamacpp'] as const;

export interface SpecCounters {
  /** Whose counters: the metric-name prefix they were read under. */
  engine: (typeof COUNTER_PREFIXES)[number];
  drafts: number;
  draftTokens: number;
  acceptedTokens: number;
  /** Accepted tokens by draft position (0 = first), when the engine exports them. */
  acceptedPerPosition?: number[];
}

/** The spec-decode counters of one scrape (the first engine prefix that has them), or undefined. Pure. */
export function specCountersFromMetrics(text: string): SpecCounters | undefined {
  const totals = parsePrometheusTotals(text);
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

/** Spec-decode counters from `/metrics` (vLLM or llama.cpp names), or undefined when the server has none. */
export async function scrapeSpecCounters(dispatcher: Dispatcher, baseUrl: string, timeoutMs = 5000): Promise<SpecCounters | undefined> {
  const text = await getText(dispatcher, `${baseUrl}/metrics`, timeoutMs);
  return text ? specCountersFromMetrics(text) : undefined;
}

/**
 * Stats from the counter delta of a level; mean accepted length = 1 + accepted / drafts (bonus token included);
 * acceptance at position i = drafts whose i-th token was accepted / drafts.
 */
export function specFromCounterDelta(before: SpecCounters, after: SpecCounters, source: string): SpecDecodeStats | undefined {
  const draftTokens = after.draftTokens - before.draftTokens;
  const acceptedTokens = after.acceptedTokens - before.acceptedTokens;
  const drafts = after.drafts - before.drafts;
  if (draftTokens <= 0) return undefined;
  const stats: SpecDecodeStats = { source, acceptanceRate: acceptedTokens / draftTokens, draftTokens, acceptedTokens };
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
  let verifiedOutput = 0;
  let haveDraft = false;
  for (const state of states) {
    if (state.specDraftTokens !== undefined && state.specAcceptedTokens !== undefined) {
      haveDraft = true;
      draftTokens += state.specDraftTokens;
      acceptedTokens += state.specAcceptedTokens;
    }
    if (state.specVerifySteps !== undefined && state.specVerifySteps > 0 && state.completionTokens !== undefined) {
      verifySteps += state.specVerifySteps;
      // The first output token comes from prefill, not from a verify step.
      verifiedOutput += state.completionTokens - 1;
    }
  }
  if (haveDraft && draftTokens > 0) {
    return { source: 'llama.cpp timings (draft_n, draft_n_accepted)', acceptanceRate: acceptedTokens / draftTokens, draftTokens, acceptedTokens };
  }
  if (verifySteps > 0) {
    // SGLang: every verify step emits its accepted drafts + 1 bonus token, so tokens / steps is the mean accept length.
    return { source: 'sglang meta_info ((completion_tokens - 1) / spec_verify_ct)', meanAcceptedLength: verifiedOutput / verifySteps };
  }
  return undefined;
}

/** SGLang's server-wide average accept length (newer versions nest it under internal_states). */
export async function scrapeSglangServerInfo(dispatcher: Dispatcher, baseUrl: string, timeoutMs = 5000): Promise<SpecDecodeStats | undefined> {
  const text = await getText(dispatcher, `${baseUrl}/get_server_info`, timeoutMs);
  if (!text) return undefined;
  try {
    const info = JSON.parse(text) as { avg_spec_accept_length?: number; internal_states?: Array<{ avg_spec_accept_length?: number }> };
    const value = info.internal_states?.[0]?.avg_spec_accept_length ?? info.avg_spec_accept_length;
    return typeof value === 'number' && value > 0
      ? { source: 'sglang /get_server_info avg_spec_accept_length (server-wide)', meanAcceptedLength: value }
      : undefined;
  } catch {
    return undefined;
  }
}
