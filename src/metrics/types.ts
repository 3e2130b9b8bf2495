/** What a benchmark measures: per-request samples, per-level summaries, the result of a run. */
import type { BackendKind } from '../profiles/types.js';

export interface Slo {
  ttftMs?: number;
  tpotMs?: number;
  e2eMs?: number;
}

/** Limits on a level's p99 latencies that every step of a capacity search must meet (load/capacity.ts). */
export interface CapacitySlo {
  ttftP99Ms?: number;
  tpotP99Ms?: number;
  e2eP99Ms?: number;
}

export type CapacityAxis = 'rate' | 'concurrency';

/** One measured step of a capacity search: the level tried and whether it met the SLOs with no request failed. */
export interface CapacityStep {
  at: number;
  label: string;
  passed: boolean;
  /** Why it failed: the first SLO missed ("TTFT p99 612 ms > 500 ms") or the failed requests. */
  why?: string;
}

/** What a capacity search found; carried by the level it names as the capacity (see LevelResult.capacity). */
export interface CapacitySearch {
  over: CapacityAxis;
  slo: CapacitySlo;
  /** Highest level that passed (req/s or requests in flight); 0 when even the lowest one failed. */
  value: number;
  /** Lowest level that failed: the capacity lies in [value, upper); absent when the highest one passed. */
  upper?: number;
  /** The bisection path, in the order measured. */
  steps: CapacityStep[];
  /** "≥ max", "even min failed", a p99 drawn from few requests: what the value alone does not say. */
  notes: string[];
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

/**
 * Which output-token count to trust when the sources disagree: the server's usage, the counted token events of the
 * stream, or the local tokenizer's count of the streamed text. Unset: usage, else tokenizer, else stream, and a
 * disagreement makes the level's result invalid.
 */
export type TokenCountSource = 'usage' | 'stream' | 'tokenizer';

/** `no-output`: the server answered a complete stream with zero output tokens: never a success. */
export type RequestErrorKind = 'http-4xx' | 'http-5xx' | 'connection' | 'timeout' | 'malformed-stream' | 'no-output' | 'aborted';

/** The output-token counts of one request by source, kept when they disagree (see countDisagreement in load/request.ts). */
export interface TokenCountDisagreement {
  usage: number;
  /** Token-bearing events. */
  stream: number;
  tokenizer?: number;
  /** Words of the streamed text: the least number of tokens it holds. */
  words?: number;
}

/**
 * One measured request. Times are milliseconds from the request's scheduled arrival (open loop: an arrival that
 * waited for the client or its in-flight cap waited as a user would) or, in a closed loop, from its first send.
 */
export interface RequestSample {
  index: number;
  /** Wall-clock send time, ms since epoch. */
  sentAtMs: number;
  inputTokens: number;
  outputTokens: number;
  /** Prompt tokens the server reported found in its prefix cache (usage, meta_info or timings); absent when it did not say. */
  cachedTokens?: number;
  /** Output tokens asked for (max_tokens). */
  requestedTokens?: number;
  /** Time from the scheduled arrival (or first send) to the send that produced this sample; absent when 0. */
  queueMs?: number;
  /** The open loop's in-flight cap held this request back. */
  waitedForSlot?: true;
  /** Sent a second time, on a fresh connection, after a kept-alive connection closed under it before any answer. */
  resent?: true;
  tokenCountDisagreement?: TokenCountDisagreement;
  ttftMs?: number;
  /** Gaps between successive token-bearing chunks. */
  itlMs: number[];
  /** The dataset category of the prompt, when it has one. */
  category?: string;
  /** Multi-turn sessions: the turn of its conversation this request was (1 = first). */
  turn?: number;
  /**
   * Shared-prefix and session workloads: prompt tokens a server with a big enough prefix cache would find cached
   * (a shared prefix seen before, the conversation so far): the target beside the achieved hit rate.
   */
  targetCachedTokens?: number;
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
  /** Verify steps (target-model forwards) of the level: SGLang's verify count, vLLM's drafts. */
  verifySteps?: number;
  /**
   * Decode time of the completed requests / their verify steps: what one speculative step (draft + verify pass)
   * costs a request. No engine reports the draft pass apart in what servelab reads, so it is included.
   */
  verifyStepMs?: number;
  /**
   * SGLang's adaptive speculative decoding: the tier in force at the level's end (gauges `sglang:spec_num_steps`,
   * `sglang:spec_num_draft_tokens`, sglang#25940), and whether it changed during the level.
   */
  adaptiveTier?: { numSteps: number; numDraftTokens: number; changed: boolean };
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
  /** Requested vs generated output tokens of completed requests: unequal work makes unequal figures. */
  outputLength?: OutputLength;
  /** Output-token counts by source over the completed requests, and which source the figures use. */
  tokenCounts?: TokenCountCheck;
  /** Requests sent a second time (see RequestSample.resent). */
  resends?: number;
  /** Prefix-cache hits over the completed requests whose server reported cached tokens; absent when none did. */
  prefixCache?: PrefixCacheCheck;
  /** Multi-turn sessions: TTFT by turn (later turns find the conversation so far cached), and sessions cut short. */
  turns?: TurnsCheck;
  /** Open loop only: offered vs achieved rates and how far the client fell behind its schedule. */
  rate?: RateCheck;
  /** Open loop only: TTFT and E2E from each request's send (ttftMs / e2eMs count from its scheduled arrival). */
  ttftFromSendMs?: Summary;
  e2eFromSendMs?: Summary;
  /** Why the level stopped sending before its last request (it had become invalid). */
  stopped?: string;
  /** The same figures per dataset category, when the prompts have categories. */
  categories?: CategoryResult[];
  /** Set on the one level of a capacity search that stands for it (the capacity, or its lowest step when none passed). */
  capacity?: CapacitySearch;
  samples: RequestSample[];
}

/** Requested vs generated output tokens of completed requests (means over them): unequal work makes unequal figures. */
export interface OutputLength {
  requestedMean: number;
  generatedMean: number;
  /** Requests that generated fewer tokens than asked (an early stop). */
  shortRequests: number;
  /** Requests counted over their max_tokens (over-length); absent when none. */
  overLengthRequests?: number;
}

export interface TokenCountCheck {
  /** The source the level's token figures use. */
  method: TokenCountMethod;
  /** The source was chosen by the user (tokenCounts option): disagreements are recorded, not fatal. */
  trusted: boolean;
  /** Completed requests, and those whose counts disagree. */
  checked: number;
  disagreeing: number;
  /** Totals over the disagreeing requests, by source. */
  usage: number;
  stream: number;
  tokenizer?: number;
  words?: number;
  /**
   * Requests whose usage exceeded their events because the events carried several tokens each (a speculating
   * server, or one that merges tokens into an event), counted by `method`, not disagreeing: their tokens and events.
   * Their ITL is the gap between events, not between tokens.
   */
  severalPerEvent?: { requests: number; tokens: number; events: number };
}

export interface PrefixCacheCheck {
  /** Cached prompt tokens / prompt tokens, over the reporting requests. */
  hitRate: number;
  cachedTokens: number;
  promptTokens: number;
  /** Completed requests that reported cached tokens, of `completed`; 0 when the figures are server counters. */
  reporting: number;
  /**
   * The earliest-sent reporting request's hit rate: what a cold cache must show, since later requests of a trial may
   * hit prefixes its own earlier prompts left (a shared system prompt). Undefined with server counters.
   */
  firstRequestHitRate?: number;
  /** That request's prompt tokens (the rule allows a fixed opening on top of a share of them). */
  firstRequestPromptTokens?: number;
  /**
   * The workload's designed hit rate (shared prefixes, conversation history; see RequestSample.targetCachedTokens):
   * what a server with a big enough cache finds, over the same requests.
   */
  targetHitRate?: number;
  /** Set when no request reported: the deltas of the server's prefix-cache counters over the trial (warm-up included). */
  counters?: string;
}

export interface TurnsCheck {
  /** TTFT median and completed requests per turn (1 = first), in turn order. */
  ttftByTurn: Array<{ turn: number; count: number; p50Ms: number }>;
  /** Sessions begun, and those a failed turn ended before their last turn (their later turns were not sent). */
  sessions: number;
  endedByFailure: number;
}

export interface RateCheck {
  /** The nominal arrival rate. */
  offeredPerSecond: number;
  /** The drawn schedule's own rate (Poisson arrivals of a short run differ from the nominal rate). */
  scheduledPerSecond: number;
  /** Coefficient of variation of the schedule's gaps: 0 constant, ~1 Poisson, ~1/sqrt(burstiness) gamma. */
  scheduledGapCv?: number;
  /** Requests actually sent per second, first to last send. */
  sentPerSecond: number;
  /** Completions per second, first to last completion: below the schedule's rate, the server fell behind. */
  servedPerSecond: number;
  /** Requests the in-flight cap held back, and the largest delay of a send behind its schedule. */
  queuedByCap: number;
  maxLagMs: number;
}

/**
 * One category's share of a level: latencies of its requests; throughputs are its completed work over the whole
 * level's wall time (the categories' figures add up to the level's). Spec-decoding stats only from per-request
 * counters: server-wide counters cannot be split by category.
 */
export type CategoryResult = Omit<
  LevelResult,
  'label' | 'concurrency' | 'targetRequestsPerSecond' | 'categories' | 'samples' | 'rate' | 'stopped' | 'capacity'
> & {
  category: string;
};

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
  /** Each measured request's answer, only when the client was asked to keep them (ClientOptions.collectOutputs). */
  outputs?: RequestOutput[];
}

/** What one request answered, for comparing the outputs of two servers or configs (src/metrics/output-match.ts). */
export interface RequestOutput {
  /** Position of the prompt in the client's prompt sequence (warm-up included): the same prompt source and seed give the same prompt. */
  prompt: number;
  level: string;
  text: string;
  /** Generated token ids, where the server returned them. */
  tokenIds?: number[];
  finishReason?: string;
  /** The request failed (error kind): its text is what arrived before. */
  error?: string;
}
