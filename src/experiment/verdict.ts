import { median } from 'simple-statistics';
import { bootstrapRatioOfMedians, rankSumTest } from './stats.js';

export type VerdictLabel = 'faster' | 'slower' | 'no significant difference' | 'insufficient data';

/** How a candidate variant compares with the baseline on one metric. Null figures: not computable (see label). */
export interface Verdict {
  /** median(candidate) / median(baseline). */
  ratio: number | null;
  /** Bootstrap confidence interval of the ratio, at level 1 − alpha. */
  ciLow: number | null;
  ciHigh: number | null;
  /** Two-sided rank-sum permutation p-value. */
  pValue: number | null;
  significant: boolean;
  label: VerdictLabel;
  n: { baseline: number; candidate: number };
}

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
