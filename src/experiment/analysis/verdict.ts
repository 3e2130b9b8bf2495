import { median } from 'simple-statistics';
import type { Verdict } from '../spec/types.js';
import { type BlockedValue, bootstrapBlockedRatio, bootstrapRatioOfMedians, rankSumTest, sharedStrata, stratifiedRankSumTest } from './stats.js';

export type { Verdict, VerdictLabel } from '../spec/types.js';

export interface CompareOptions {
  /** Significance level, e.g. 0.05. The CI is computed at level 1 − alpha so both criteria agree. */
  alpha: number;
  /** Smallest relative change worth calling, e.g. 0.02 for 2%: smaller significant changes are reported as no difference. */
  minEffect?: number;
  seed: number;
  /** True for throughput-like metrics, false for latencies; decides whether a ratio > 1 is 'faster'. */
  higherIsBetter: boolean;
  /** Bootstrap resamples (default 10000). */
  iterations?: number;
}

/**
 * Verdict of candidate vs baseline. Significant only when the permutation p-value is below alpha AND the bootstrap
 * CI of the ratio of medians excludes 1 (two independent views must agree) AND the effect reaches minEffect.
 */
export function compareVariant(baseline: number[], candidate: number[], options: CompareOptions): Verdict {
  const n = { baseline: baseline.length, candidate: candidate.length };
  const insufficient: Verdict = { ratio: null, ciLow: null, ciHigh: null, pValue: null, significant: false, label: 'insufficient data', n };
  if (baseline.length === 0 || candidate.length === 0) return insufficient;
  const baseMedian = median(baseline);
  if (baseMedian === 0 || !Number.isFinite(baseMedian)) return insufficient;
  const ratio = median(candidate) / baseMedian;
  if (baseline.length < 2 || candidate.length < 2) return { ...insufficient, ratio };

  const interval = bootstrapRatioOfMedians(baseline, candidate, {
    seed: options.seed,
    confidence: 1 - options.alpha,
    ...(options.iterations === undefined ? {} : { iterations: options.iterations }),
  });
  const { pValue } = rankSumTest(baseline, candidate, { seed: options.seed });
  return decide(ratio, interval, pValue, n, options);
}

/** Significant when p < alpha, the CI excludes 1 and the effect reaches minEffect. */
function decide(ratio: number, interval: { low: number; high: number }, pValue: number, n: Verdict['n'], options: CompareOptions): Verdict {
  const ciExcludesOne = interval.low > 1 || interval.high < 1;
  const bigEnough = Math.abs(ratio - 1) >= (options.minEffect ?? 0);
  const significant = pValue < options.alpha && ciExcludesOne && bigEnough;
  const better = options.higherIsBetter ? ratio > 1 : ratio < 1;
  return {
    ratio,
    ciLow: interval.low,
    ciHigh: interval.high,
    pValue,
    significant,
    label: significant ? (better ? 'faster' : 'slower') : 'no significant difference',
    n,
  };
}

/**
 * The same verdict for a blocked schedule, compared within blocks (passes): the stratified rank-sum test and the
 * bootstrap CI of the within-block ratio, so a drift between passes cancels instead of widening both. Trials in a
 * block without the other group are not compared (n counts the compared ones); ratio = the within-block ratio.
 */
export function compareBlocked(baseline: readonly BlockedValue[], candidate: readonly BlockedValue[], options: CompareOptions): Verdict {
  const strata = sharedStrata(baseline, candidate);
  const n = { baseline: sum(strata.map((stratum) => stratum.baseline.length)), candidate: sum(strata.map((stratum) => stratum.candidate.length)) };
  const insufficient: Verdict = { ratio: null, ciLow: null, ciHigh: null, pValue: null, significant: false, label: 'insufficient data', n };
  const interval = bootstrapBlockedRatio(baseline, candidate, {
    seed: options.seed,
    confidence: 1 - options.alpha,
    ...(options.iterations === undefined ? {} : { iterations: options.iterations }),
  });
  if (!interval) return insufficient;
  if (n.baseline < 2 || n.candidate < 2) return { ...insufficient, ratio: interval.ratio };
  const { pValue } = stratifiedRankSumTest(baseline, candidate, { seed: options.seed });
  return decide(interval.ratio, interval, pValue, n, options);
}

/** The test and CI behind a run's verdicts, for the tables that show them; `lanes`: the run has several. */
export function verdictMethod(blocked: boolean, lanes = false): string {
  if (lanes)
    return blocked
      ? 'exact rank-sum test stratified by lane and pass, bootstrap CI of the within-lane, within-pass ratio of medians'
      : 'exact rank-sum test stratified by lane, bootstrap CI of the within-lane ratio of medians';
  return blocked
    ? 'exact rank-sum test stratified by block, bootstrap CI of the within-block ratio of medians'
    : 'exact rank-sum test, bootstrap CI of the ratio of medians';
}

/** Blocked schedules compare within blocks, interleaved ones (one trial per pair and block) pooled. */
export function compareSamples(baseline: readonly BlockedValue[], candidate: readonly BlockedValue[], options: CompareOptions & { blocked: boolean }): Verdict {
  return options.blocked
    ? compareBlocked(baseline, candidate, options)
    : compareVariant(
        baseline.map((entry) => entry.value),
        candidate.map((entry) => entry.value),
        options,
      );
}

function sum(values: number[]): number {
  return values.reduce((acc, value) => acc + value, 0);
}
