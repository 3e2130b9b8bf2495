import { request, type Dispatcher } from 'undici';
import { closedUnderUs } from './request.js';
import { parsePrometheusByLabel, parsePrometheusTotals } from '../metrics/prometheus.js';
import type { StreamState } from './backends.js';
import type { SpecDecodeStats } from './types.js';

/**
 * Speculative-decoding statistics of one level, from the best source available:
 * 1. per-request counters in the responses (llama.cpp `timings.draft_n[_accepted]`, SGLang `meta_info.spec_verify_ct`);
 * 2. vLLM Prometheus counters (`vllm:spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total`, and
 *    `…_accepted_tokens_per_pos_total{position}` where the engine has it; the simulator exposes the same), as the
 *    delta between a scrape before and after the level;
 * 3. SGLang `/get_server_info` `avg_spec_accept_length` (a server-wide running mean, not per level).
 */

const VLLM_DRAFTS = 'vllm:spec_decode_num_drafts_total';
const VLLM_DRAFT_TOKENS = 'vllm:spec_decode_num_draft_tokens_total';
const VLLM_ACCEPTED = 'vllm:spec_decode_num_accepted_tokens_total';
const VLLM_ACCEPTED_PER_POSITION = 'vllm:spec_decode_num_accepted_tokens_per_pos_total';

export interface SpecCounters {
  drafts: number;
  draftTokens: number;
  acceptedTokens: number;
  /** Accepted tokens by draft position (0 = first), when the engine exports them. */
  acceptedPerPosition?: number[];
}

/** The per-position counter as an array indexed by position, or undefined when absent or with gaps. */
function acceptedPerPosition(text: string): number[] | undefined {
  const byLabel = parsePrometheusByLabel(text, VLLM_ACCEPTED_PER_POSITION, 'position');
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

/** vLLM spec-decode counters from `/metrics`, or undefined when the server has none (no spec decoding, no endpoint). */
export async function scrapeVllmSpecCounters(dispatcher: Dispatcher, baseUrl: string, timeoutMs = 5000): Promise<SpecCounters | undefined> {
  const text = await getText(dispatcher, `${baseUrl}/metrics`, timeoutMs);
  if (!text) return undefined;
  const totals = parsePrometheusTotals(text);
  const draftTokens = totals.get(VLLM_DRAFT_TOKENS);
  const acceptedTokens = totals.get(VLLM_ACCEPTED);
  if (draftTokens === undefined || acceptedTokens === undefined) return undefined;
  const perPosition = acceptedPerPosition(text);
  return { drafts: totals.get(VLLM_DRAFTS) ?? 0, draftTokens, acceptedTokens, ...(perPosition && { acceptedPerPosition: perPosition }) };
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
    return typeof value === 'number' && value > 0 ? { source: 'sglang /get_server_info avg_spec_accept_length (server-wide)', meanAcceptedLength: value } : undefined;
  } catch {
    return undefined;
  }
}
