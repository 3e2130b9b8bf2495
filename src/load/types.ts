import type { BackendKind } from '../profiles/types.js';
import type { BenchProgress, Slo } from '../metrics/types.js';

// The measurement types live in metrics/ (the store records them); re-exported for the load modules.
export type * from '../metrics/types.js';

/** Integer length distribution for synthetic prompts/outputs. */
export type LengthDistribution =
  | { kind: 'fixed'; value: number }
  | { kind: 'uniform'; min: number; max: number }
  | { kind: 'normal'; mean: number; stddev: number; min?: number; max?: number };

export type PromptSource =
  | { kind: 'synthetic'; inputTokens: LengthDistribution; outputTokens: LengthDistribution; seed: number }
  | { kind: 'sharegpt'; path: string; seed: number; maxOutputTokens?: number }
  | { kind: 'jsonl'; path: string; maxOutputTokens?: number };

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
  warmupRequests: number;
  /** Ask the server to ignore EOS so output lengths are exactly the requested ones. */
  ignoreEos: boolean;
  /** A request that has produced nothing for this long is failed as a stall. */
  requestTimeoutMs: number;
  slo?: Slo;
  /** Local tokenizer.json (HF format) used to count tokens when the server reports no usage. */
  tokenizerPath?: string;
  /** Prometheus/props endpoint scraping for speculative-decoding stats; 'auto' picks by backend. */
  specMetrics: 'auto' | 'none';
  signal?: AbortSignal;
  onProgress?: (progress: BenchProgress) => void;
}
