import type { BenchProgress, CapacityAxis, CapacitySlo, Slo, TokenCountSource } from '../metrics/types.js';
import type { BackendKind } from '../profiles/types.js';
import type { DatasetSource } from './datasets/types.js';
import type { TraceSource } from './trace/types.js';

// The measurement types live in metrics/ (the store records them); re-exported for the load modules.
export type * from '../metrics/types.js';

/** Integer length distribution for synthetic prompts/outputs. */
export type LengthDistribution =
  | { kind: 'fixed'; value: number }
  | { kind: 'uniform'; min: number; max: number }
  | { kind: 'normal'; mean: number; stddev: number; min?: number; max?: number };

/** Wait before a session's next turn: always the same, or drawn from an exponential distribution of that mean. */
export type ThinkTime = { kind: 'fixed'; ms: number } | { kind: 'exponential'; meanMs: number };

/**
 * Multi-turn conversations (load/sessions.ts): each turn carries the server's own earlier answers. Human turns are
 * generated (inputTokens words each) or read from a ShareGPT file (`path`); the workload's concurrency is sessions in
 * flight and its requests are turns.
 */
export interface SessionsSource {
  kind: 'sessions';
  /** Turns per session (from a file: at most this many of each conversation's human turns). */
  turns: number;
  inputTokens: LengthDistribution;
  outputTokens: LengthDistribution;
  thinkTime: ThinkTime;
  seed: number;
  path?: string;
}

/** Prompts that share long prefixes (load/shared-prefix.ts): `prefixes` documents × `questionsPerPrefix` questions each. */
export interface SharedPrefixSource {
  kind: 'shared-prefix';
  prefixes: number;
  prefixTokens: number;
  questionsPerPrefix: number;
  questionTokens: number;
  outputTokens: LengthDistribution;
  seed: number;
}

export type PromptSource =
  | { kind: 'synthetic'; inputTokens: LengthDistribution; outputTokens: LengthDistribution; seed: number }
  | DatasetSource
  | TraceSource
  | SessionsSource
  | SharedPrefixSource;

export const ARRIVAL_PROCESSES = ['poisson', 'constant', 'gamma'] as const;
export type ArrivalProcess = (typeof ARRIVAL_PROCESSES)[number];

/** An open loop's arrivals: at this mean rate, spaced by the process, at most maxInFlight in flight. */
export interface RateSchedule {
  requestsPerSecond: number;
  arrival: ArrivalProcess;
  /** Gamma arrivals only: the shape; gaps have a coefficient of variation of 1/sqrt(burstiness) (1 = Poisson). */
  burstiness?: number;
  maxInFlight: number;
}

export type Workload =
  /** One request at a time: the "tok/s" an engineer quotes. */
  | { kind: 'single-stream'; requests: number }
  | { kind: 'concurrency'; concurrency: number; requests: number }
  | ({ kind: 'rate'; requests: number } & RateSchedule)
  | { kind: 'sweep'; concurrencies: number[]; requestsPerLevel: number }
  /** Open loop on a production trace's own arrival times (prompts of kind trace); requests unset: all in its window. */
  | { kind: 'trace'; requests?: number; maxInFlight: number }
  /** The highest level meeting the SLOs, by bisection between min and max (load/capacity.ts); rate fields only over rate. */
  | ({ kind: 'capacity'; over: CapacityAxis; min: number; max: number; steps: number; requestsPerStep: number; slo: CapacitySlo } & Partial<
      Pick<RateSchedule, 'arrival' | 'burstiness' | 'maxInFlight'>
    >);

/**
 * Everything that says how the load client measures, as plain data: `servelab bench` flags parse into it, the
 * experiment file's client section resolves into it, and a remote client's argv is written from it (exec/remote-bench.ts).
 */
export interface ClientOptions {
  backend: BackendKind;
  model?: string;
  workload: Workload;
  prompts: PromptSource;
  /** Opens every prompt with words derived from this number (see saltPrompts): a cold prefix cache per salt. */
  promptSalt?: number;
  /** false: send llama.cpp's `cache_prompt: false` with every request (no prompt-cache reuse). */
  cachePrompt?: false;
  /**
   * false: every request on a connection of its own (`Connection: close`), for a server that closes a connection after
   * each streamed response while advertising keep-alive (llama-server): a request reusing it could race the close.
   */
  keepAlive?: false;
  /** Requests sent before measuring, not counted (see load/warmup.ts); 0 and no warmupMs: none. */
  warmupRequests: number;
  /** Instead of a count: warm-up rounds until this long has passed. */
  warmupMs?: number;
  /** Each level gets its own warm-up at its own concurrency or rate (a new batch size warms up on first use). */
  warmupPerLevel?: boolean;
  /** Ask the server to ignore EOS so output lengths are exactly the requested ones. */
  ignoreEos: boolean;
  /** A request that has produced nothing for this long is failed as a stall. */
  requestTimeoutMs: number;
  /** With ignoreEos: a request that stopped short of its requested length makes the level invalid (default true). */
  requireFullOutput?: boolean;
  /** The output-token count to trust when the sources disagree (see TokenCountSource); unset: a disagreement is invalid. */
  tokenCounts?: TokenCountSource;
  /** A level stops sending once more than this fraction of its requests failed: it can no longer be valid. Unset: never. */
  maxFailedFraction?: number;
  slo?: Slo;
  /** HF tokenizer.json or model directory: exact prompt lengths, chat template, counts when the server reports none. */
  tokenizerPath?: string;
  /** The model's context in tokens: a trace or dataset request that cannot fit it is refused before any is sent (unset: MAX_REQUEST_TOKENS). */
  contextTokens?: number;
  /** Load-generation threads (own event loop and connection pool each); 'auto' = one per core. Default 1: this thread. */
  workers?: number | 'auto';
  /** Prometheus/props endpoint scraping for speculative-decoding stats; 'auto' picks by backend. */
  specMetrics: 'auto' | 'none';
  /** Keep each measured request's answer (text, token ids, finish reason) in the result's `outputs`. */
  collectOutputs?: boolean;
}

/** A run of the load client: its options, the server, and the caller's hooks. */
export interface BenchOptions extends ClientOptions {
  baseUrl: string;
  /** How the caller names the request timeout (`--request-timeout`, `client.requestTimeout`), for timeout messages. */
  requestTimeoutSetting?: string;
  signal?: AbortSignal;
  onProgress?: (progress: BenchProgress) => void;
  /**
   * Awaited after a request could not connect, before another is sent: a liveness watch checks the server and
   * aborts `signal` if it is dead, so the rest of the workload is not fired into it (see load/liveness.ts).
   */
  verifyServer?: () => Promise<void>;
}
