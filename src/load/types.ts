import type { BackendKind } from '../profiles/types.js';
import type { DatasetSource } from './datasets/types.js';

/** Integer length distribution for synthetic prompts/outputs. */
export type LengthDistribution =
  | { kind: 'fixed'; value: number }
  | { kind: 'uniform'; min: number; max: number }
  | { kind: 'normal'; mean: number; stddev: number; min?: number; max?: number };

export type PromptSource =
  | { kind: 'synthetic'; inputTokens: LengthDistribution; outputTokens: LengthDistribution; seed: number }
  | DatasetSource;

export type Workload =
  /** One request at a time: the "tok/s" an engineer quotes. */
  | { kind: 'single-stream'; requests: number }
  | { kind: 'concurrency'; concurrency: number; requests: number }
  | { kind: 'rate'; requestsPerSecond: number; arrival: 'poisson' | 'constant'; maxInFlight: number; requests: number }
  | { kind: 'sweep'; concurrencies: number[]; requestsPerLevel: number };

export interface Slo {
  ttftMs?: number;
  tpotMs?: number;
  e2eMs?: number;
}

export interface BenchOptions {
  baseUrl: string;
  backend: BackendKind;
  model?: string;
  workload: Workload;
  prompts: PromptSource;
  /** Opens every prompt with words derived from this number (see saltPrompts): a cold prefix cache per salt. */
  promptSalt?: number;
  /** false: send llama.cpp's `cache_prompt: false` with every request (no prompt-cache reuse). */
  cachePrompt?: false;
  warmupRequests: number;
  /** Ask the server to ignore EOS so output lengths are exactly the requested ones. */
  ignoreEos: boolean;
  /** A request that has produced nothing for this long is failed as a stall. */
  requestTimeoutMs: number;
  slo?: Slo;
  /** HF tokenizer.json or model directory: exact prompt lengths, chat template, counts when the server reports none. */
  tokenizerPath?: string;
  /** Load-generation threads (own event loop and connection pool each); 'auto' = one per core. Default 1: this thread. */
  workers?: number | 'auto';
  /** Prometheus/props endpoint scraping for speculative-decoding stats; 'auto' picks by backend. */
  specMetrics: 'auto' | 'none';
  signal?: AbortSignal;
  onProgress?: (progress: BenchProgress) => void;
  /**
   * Awaited after a request could not connect, before another is sent: a liveness watch checks the server and
   * aborts `signal` if it is dead, so the rest of the workload is not fired into it (see load/liveness.ts).
   */
  verifyServer?: () => Promise<void>;
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
