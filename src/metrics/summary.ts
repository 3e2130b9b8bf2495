import { quantileSorted } from 'simple-statistics';
import type { LevelResult, RequestErrorKind, RequestSample, Slo, SpecDecodeStats, Summary } from './types.js';

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
    outputTokensPerSecondPerStream: summarize(completed.filter((sample) => sample.e2eMs! > 0).map((sample) => sample.outputTokens / (sample.e2eMs! / 1000))),
    outputTokensPerSecond: outputTokens / duration,
    totalTokensPerSecond: (inputTokens + outputTokens) / duration,
    requestsPerSecond: completed.length / duration,
    samples: input.samples,
  };
  if (input.concurrency !== undefined) result.concurrency = input.concurrency;
  if (input.targetRequestsPerSecond !== undefined) result.targetRequestsPerSecond = input.targetRequestsPerSecond;
  const slo = input.slo;
  if (slo && (slo.ttftMs !== undefined || slo.tpotMs !== undefined || slo.e2eMs !== undefined)) {
    const attempted = completed.length + failed;
    const good = completed.filter((sample) => meetsSlo(sample, slo)).length;
    result.goodput = { fraction: attempted > 0 ? good / attempted : 0, requestsPerSecond: good / duration };
  }
  if (input.spec) result.spec = input.spec;
  return result;
}
