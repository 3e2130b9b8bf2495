import type { BenchProgress, Slo } from '../metrics/types.js';
import type { BackendKind } from '../profiles/types.js';
import type { DatasetSource } from './datasets/types.js';

// The measurement types live in metrics/ (the store records them); re-exported for the load modules.
export type * from '../metrics/types.js';

/** Integer length distribution for synthetic prompts/outputs. */
export type LengthDistribution =
  | { kind: 'fixed'; value: number }
  | { kind: 'uniform'; min: number; max: number }
  | { kind: 'normal'; mean: number; stddev: number; min?: number; max?: number };

export type PromptSource = { kind: 'synthetic'; inputTokens: LengthDistribution; outputTokens: LengthDistribution; seed: number } | DatasetSource;

export type Workload =
  /** One request at a time: the "tok/s" an engineer quotes. */
  | { kind: 'single-stream'; requests: number }
  | { kind: 'concurrency'; concurrency: number; requests: number }
  | { kind: 'rate'; requestsPerSecond: number; arrival: 'poisson' | 'constant'; maxInFlight: number; requests: number }
  | { kind: 'sweep'; concurrencies: number[]; requestsPerLevel: number };

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
