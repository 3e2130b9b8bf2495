import { quantileSorted } from 'simple-statistics';
import type {
  LevelResult,
  PrefixCacheCheck,
  RateCheck,
  RequestErrorKind,
  RequestSample,
  Slo,
  SpecDecodeStats,
  Summary,
  TokenCountCheck,
  TokenCountDisagreement,
  TokenCountMethod,
} from './types.js';
import { targetHitRate, turnsCheck } from './workload-shape.js';

/**
 * Quantiles use simple-statistics' quantileSorted: linear interpolation between closest ranks (R type 7, numpy's
 * default `percentile`), the method vLLM's `bench serve` uses, so figures compare directly.
 * An empty set summarises to zeros with count 0 (JSON has no NaN); readers check `count`.
 */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) return { mean: 0, median: 0, p90: 0, p95: 0, p99: 0, min: 0, max: 0, count: 0 };
  const sorted = Float64Array.from(values).sort() as unknown as number[];
  let total = 0;
  for (const value of sorted) total += value;
  return {
    mean: total / sorted.length,
    median: quantileSorted(sorted, 0.5),
    p90: quantileSorted(sorted, 0.9),
    p95: quantileSorted(sorted, 0.95),
    p99: quantileSorted(sorted, 0.99),
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    count: sorted.length,
  };
}

export interface LevelInput {
  label: string;
  concurrency?: number;
  targetRequestsPerSecond?: number;
  /** Wall time from the first send to the last completion of the level. */
  durationS: number;
  samples: RequestSample[];
  slo?: Slo;
  spec?: SpecDecodeStats;
  /** The level's token-count method, and whether the user chose the source (see TokenCountSource). */
  tokenCounts?: { method: TokenCountMethod; trusted: boolean };
  /** Why the level stopped sending early. */
  stopped?: string;
}

/** True when a completed request meets every SLO given (a request with no TPOT — one output token — passes TPOT). */
export function meetsSlo(sample: RequestSample, slo: Slo): boolean {
  if (sample.error || sample.e2eMs === undefined) return false;
  if (slo.ttftMs !== undefined && (sample.ttftMs === undefined || sample.ttftMs > slo.ttftMs)) return false;
  if (slo.tpotMs !== undefined && sample.tpotMs !== undefined && sample.tpotMs > slo.tpotMs) return false;
  if (slo.e2eMs !== undefined && sample.e2eMs > slo.e2eMs) return false;
  return true;
}

/**
 * Aggregate one level. Latency summaries use completed requests only; ITL pools every gap of every completed
 * request. Throughputs divide completed work by the level's wall time. Aborted requests (Ctrl-C) are listed in
 * errorsByKind but are not counted as failures: the server did nothing wrong.
 */
export function summarizeLevel(input: LevelInput): LevelResult {
  const completed = input.samples.filter((sample) => !sample.error);
  const errorsByKind: Partial<Record<RequestErrorKind, number>> = {};
  let failed = 0;
  for (const sample of input.samples) {
    if (!sample.error) continue;
    errorsByKind[sample.error.kind] = (errorsByKind[sample.error.kind] ?? 0) + 1;
    if (sample.error.kind !== 'aborted') failed++;
  }
  const itl: number[] = [];
  let outputTokens = 0;
  let inputTokens = 0;
  for (const sample of completed) {
    for (const gap of sample.itlMs) itl.push(gap);
    outputTokens += sample.outputTokens;
    inputTokens += sample.inputTokens;
  }
  const duration = input.durationS > 0 ? input.durationS : Number.POSITIVE_INFINITY;
  const defined = (values: Array<number | undefined>) => values.filter((value): value is number => value !== undefined);
  const result: LevelResult = {
    label: input.label,
    durationS: input.durationS,
    completed: completed.length,
    failed,
    errorsByKind,
    ttftMs: summarize(defined(completed.map((sample) => sample.ttftMs))),
    itlMs: summarize(itl),
    tpotMs: summarize(defined(completed.map((sample) => sample.tpotMs))),
    e2eMs: summarize(defined(completed.map((sample) => sample.e2eMs))),
    // A stream's speed is the server's: counted from the send, not from a scheduled arrival.
    outputTokensPerSecondPerStream: summarize(
      completed.filter((sample) => fromSend(sample.e2eMs!, sample) > 0).map((sample) => sample.outputTokens / (fromSend(sample.e2eMs!, sample) / 1000)),
    ),
    outputTokensPerSecond: outputTokens / duration,
    totalTokensPerSecond: (inputTokens + outputTokens) / duration,
    requestsPerSecond: completed.length / duration,
    samples: input.samples,
  };
  if (input.concurrency !== undefined) result.concurrency = input.concurrency;
  if (input.targetRequestsPerSecond !== undefined) {
    result.targetRequestsPerSecond = input.targetRequestsPerSecond;
    result.ttftFromSendMs = summarize(completed.flatMap((sample) => (sample.ttftMs === undefined ? [] : [fromSend(sample.ttftMs, sample)])));
    result.e2eFromSendMs = summarize(completed.map((sample) => fromSend(sample.e2eMs!, sample)));
    const rate = rateCheck(input.targetRequestsPerSecond, input.samples);
    if (rate) result.rate = rate;
  }
  const outputLength = outputLengthOf(completed, input.tokenCounts?.method);
  if (outputLength) result.outputLength = outputLength;
  if (input.tokenCounts) result.tokenCounts = tokenCountCheck(completed, input.tokenCounts, input.spec !== undefined);
  const prefixCache = prefixCacheOf(completed);
  if (prefixCache) result.prefixCache = prefixCache;
  const turns = turnsCheck(input.samples);
  if (turns) result.turns = turns;
  const resends = input.samples.filter((sample) => sample.resent).length;
  if (resends > 0) result.resends = resends;
  if (input.stopped !== undefined) result.stopped = input.stopped;
  const slo = input.slo;
  if (slo && (slo.ttftMs !== undefined || slo.tpotMs !== undefined || slo.e2eMs !== undefined)) {
    const attempted = completed.length + failed;
    const good = completed.filter((sample) => meetsSlo(sample, slo)).length;
    result.goodput = { fraction: attempted > 0 ? good / attempted : 0, requestsPerSecond: good / duration };
  }
  if (input.spec) result.spec = input.spec;
  return result;
}

/** A latency counted from the request's send rather than its scheduled arrival. */
function fromSend(ms: number, sample: RequestSample): number {
  return ms - (sample.queueMs ?? 0);
}

/**
 * Most a local tokenizer's count of the streamed text may differ from the model's own: a boundary token or two per
 * hundred (a re-tokenized text can merge or split where the model's generation did not).
 */
export function tokenizerTolerance(tokens: number): number {
  return Math.max(1, Math.ceil(0.02 * tokens));
}

/**
 * Requested vs generated tokens. A request over its max_tokens is judged on the count the figures use: a server's
 * own count (usage) and the stream's events (each carries at least one token) are exact bounds, as engines stop at
 * the cap even mid speculative step (sgl-project/sglang#31599: "can only reach the cap, never overshoot"); a local
 * tokenizer's count gets its tolerance.
 */
function outputLengthOf(completed: readonly RequestSample[], method?: TokenCountMethod): LevelResult['outputLength'] {
  let requested = 0;
  let generated = 0;
  let counted = 0;
  let shortRequests = 0;
  let overLengthRequests = 0;
  for (const sample of completed) {
    if (sample.requestedTokens === undefined) continue;
    counted++;
    requested += sample.requestedTokens;
    generated += sample.outputTokens;
    if (sample.outputTokens < sample.requestedTokens) shortRequests++;
    const slack = method === 'tokenizer' ? tokenizerTolerance(sample.requestedTokens) : 0;
    if (sample.outputTokens > sample.requestedTokens + slack) overLengthRequests++;
  }
  if (counted === 0) return undefined;
  return { requestedMean: requested / counted, generatedMean: generated / counted, shortRequests, ...(overLengthRequests > 0 && { overLengthRequests }) };
}

/**
 * Requests whose counts disagree (see countDisagreement in load/request.ts), less those whose usage is explained by
 * events that carried several tokens each (`eventsCarriedSeveral`): those are counted apart, by the level's method.
 */
function tokenCountCheck(completed: readonly RequestSample[], source: { method: TokenCountMethod; trusted: boolean }, speculative: boolean): TokenCountCheck {
  const check: TokenCountCheck = { method: source.method, trusted: source.trusted, checked: 0, disagreeing: 0, usage: 0, stream: 0 };
  for (const sample of completed) {
    const counts = sample.tokenCountDisagreement;
    check.checked++;
    if (!counts) continue;
    if (eventsCarriedSeveral(counts, speculative)) {
      const several = (check.severalPerEvent ??= { requests: 0, tokens: 0, events: 0 });
      several.requests++;
      several.tokens += counts.usage;
      several.events += counts.stream;
      continue;
    }
    check.disagreeing++;
    check.usage += counts.usage;
    check.stream += counts.stream;
    if (counts.tokenizer !== undefined) check.tokenizer = (check.tokenizer ?? 0) + counts.tokenizer;
    if (counts.words !== undefined) check.words = (check.words ?? 0) + counts.words;
  }
  return check;
}

/**
 * Usage above the stream's events is honest when the events carried several tokens: a speculating server's do (its
 * counters say so), and so do those of a server that merges the tokens its client has not taken yet into one event
 * (vLLM: vllm/v1/engine/output_processor.py, RequestOutputCollector.put aggregates while the consumer lags). What
 * shows it: a local tokenizer's count of the text agreeing with usage, else (none given) more words in the text than
 * events, with usage at least those words. Without a tokenizer nothing bounds usage from above: the level's note
 * says the figures count it.
 */
export function eventsCarriedSeveral(counts: TokenCountDisagreement, speculative: boolean): boolean {
  const { usage, stream, tokenizer, words } = counts;
  if (usage <= stream + 1) return false;
  if (tokenizer !== undefined) return Math.abs(tokenizer - usage) <= tokenizerTolerance(usage);
  if (words !== undefined && usage < words - tokenizerTolerance(words)) return false;
  return speculative || (words !== undefined && words > stream + 1);
}

/** Per second over the span of `times` (ms), or undefined with fewer than two. */
function spanRate(times: readonly number[]): number | undefined {
  if (times.length < 2) return undefined;
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const time of times) {
    if (time < first) first = time;
    if (time > last) last = time;
  }
  return last > first ? ((times.length - 1) * 1000) / (last - first) : undefined;
}

/** Prefix-cache hit rate over the completed requests whose server said how many prompt tokens it found cached. */
function prefixCacheOf(completed: readonly RequestSample[]): PrefixCacheCheck | undefined {
  let cachedTokens = 0;
  let promptTokens = 0;
  let reporting = 0;
  let first: RequestSample | undefined;
  for (const sample of completed) {
    if (sample.cachedTokens === undefined) continue;
    cachedTokens += sample.cachedTokens;
    promptTokens += sample.inputTokens;
    reporting++;
    if (first === undefined || sample.sentAtMs < first.sentAtMs) first = sample;
  }
  if (first === undefined) return undefined;
  const firstRequestHitRate = first.inputTokens > 0 ? (first.cachedTokens ?? 0) / first.inputTokens : 0;
  const target = targetHitRate(completed.filter((sample) => sample.cachedTokens !== undefined));
  return {
    hitRate: promptTokens > 0 ? cachedTokens / promptTokens : 0,
    cachedTokens,
    promptTokens,
    reporting,
    firstRequestHitRate,
    firstRequestPromptTokens: first.inputTokens,
    ...(target !== undefined && { targetHitRate: target }),
  };
}

/** Coefficient of variation (stddev / mean) of the gaps between sorted times. */
function gapCv(times: readonly number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  const gaps = sorted.slice(1).map((time, index) => time - sorted[index]!);
  const mean = gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length;
  const variance = gaps.reduce((sum, gap) => sum + (gap - mean) ** 2, 0) / (gaps.length - 1);
  return mean > 0 ? Math.sqrt(variance) / mean : 0;
}

/**
 * Offered, scheduled, sent and served rates of an open-loop level, from wall-clock send times: a request's
 * scheduled arrival is its send less its queueing, its completion its send plus its time from send.
 */
function rateCheck(offered: number, samples: readonly RequestSample[]): RateCheck | undefined {
  const sent = samples.filter((sample) => sample.error?.kind !== 'aborted');
  const scheduledTimes = sent.map((sample) => sample.sentAtMs - (sample.queueMs ?? 0));
  const scheduled = spanRate(scheduledTimes);
  const sentRate = spanRate(sent.map((sample) => sample.sentAtMs));
  if (scheduled === undefined || sentRate === undefined) return undefined;
  const completions = sent.filter((sample) => !sample.error).map((sample) => sample.sentAtMs + fromSend(sample.e2eMs!, sample));
  let maxLagMs = 0;
  for (const sample of sent) maxLagMs = Math.max(maxLagMs, sample.queueMs ?? 0);
  return {
    offeredPerSecond: offered,
    scheduledPerSecond: scheduled,
    ...(scheduledTimes.length > 2 && { scheduledGapCv: gapCv(scheduledTimes) }),
    sentPerSecond: sentRate,
    servedPerSecond: spanRate(completions) ?? 0,
    queuedByCap: sent.filter((sample) => sample.waitedForSlot).length,
    maxLagMs,
  };
}
