/** What a benchmark measures: per-request samples, per-level summaries, the result of a run. */
import type { BackendKind } from '../profiles/types.js';

export interface Slo {
  ttftMs?: number;
  tpotMs?: number;
  e2eMs?: number;
}

export interface BenchProgress {
  levelLabel: string;
  completed: number;
  total: number;
  failed: number;
  outputTokensPerSecond: number;
  elapsedMs: number;
}

export type TokenCountMethod = 'server-usage' | 'tokenizer' | 'stream-chunks';

export type RequestErrorKind = 'http-4xx' | 'http-5xx' | 'connection' | 'timeout' | 'malformed-stream' | 'aborted';

/** One measured request. Times are milliseconds relative to the request's send time. */
export interface RequestSample {
  index: number;
  /** Wall-clock send time, ms since epoch. */
  sentAtMs: number;
  inputTokens: number;
  outputTokens: number;
  ttftMs?: number;
  /** Gaps between successive token-bearing chunks. */
  itlMs: number[];
  /** The dataset category of the prompt, when it has one. */
  category?: string;
  /** (e2e - ttft) / (outputTokens - 1). */
  tpotMs?: number;
  e2eMs?: number;
  error?: { kind: RequestErrorKind; message: string };
}

export interface Summary {
  mean: number;
  median: number;
  p90: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
  count: number;
}

export interface SpecDecodeStats {
  source: string;
  /** Accepted draft tokens / proposed draft tokens. */
  acceptanceRate?: number;
  /** Mean tokens produced per verification step (accepted + 1 bonus), as SGLang reports `spec_accept_length`. */
  meanAcceptedLength?: number;
  /** Share of drafts whose token at position i (0 = first) was accepted, where the engine counts it per position. */
  acceptanceByPosition?: number[];
  draftTokens?: number;
  acceptedTokens?: number;
}

export interface LevelResult {
  /** e.g. "c=8", "single-stream", "rate=4/s". */
  label: string;
  concurrency?: number;
  /** Offered arrival rate of a rate workload. */
  targetRequestsPerSecond?: number;
  durationS: number;
  completed: number;
  failed: number;
  errorsByKind: Partial<Record<RequestErrorKind, number>>;
  ttftMs: Summary;
  itlMs: Summary;
  tpotMs: Summary;
  e2eMs: Summary;
  /** Output tokens/s seen by one stream (mean over requests of outputTokens / e2e). */
  outputTokensPerSecondPerStream: Summary;
  outputTokensPerSecond: number;
  totalTokensPerSecond: number;
  requestsPerSecond: number;
  /** Fraction of requests meeting every SLO, and those requests per second. */
  goodput?: { fraction: number; requestsPerSecond: number };
  spec?: SpecDecodeStats;
  /** The same figures per dataset category, when the prompts have categories. */
  categories?: CategoryResult[];
  samples: RequestSample[];
}

/**
 * One category's share of a level: latencies of its requests; throughputs are its completed work over the whole
 * level's wall time (the categories' figures add up to the level's). Spec-decoding stats only from per-request
 * counters: server-wide counters cannot be split by category.
 */
export type CategoryResult = Omit<LevelResult, 'label' | 'concurrency' | 'targetRequestsPerSecond' | 'categories' | 'samples'> & { category: string };

export interface BenchResult {
  schemaVersion: 1;
  startedAt: string;
  baseUrl: string;
  backend: BackendKind;
  model?: string;
  tokenCountMethod: TokenCountMethod;
  /** True when Ctrl-C or an abort ended the run early; the levels hold what was measured. */
  interrupted: boolean;
  levels: LevelResult[];
}
