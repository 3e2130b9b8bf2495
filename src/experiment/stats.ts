import { median, quantileSorted } from 'simple-statistics';
import { mulberry32 } from '../util/random.js';

export interface RatioInterval {
  /** median(candidate) / median(baseline). */
  ratio: number;
  low: number;
  high: number;
}

/**
 * Percentile-bootstrap confidence interval of median(candidate) / median(baseline). Each group is resampled
 * independently (the trials of two variants are separate samples). Seeded, so the interval is reproducible.
 */
export function bootstrapRatioOfMedians(
  baseline: number[],
  candidate: number[],
  options: { iterations?: number; confidence?: number; seed: number },
): RatioInterval {
  if (baseline.length === 0 || candidate.length === 0) throw new RangeError('bootstrap needs at least one sample per group');
  const iterations = options.iterations ?? 10_000;
  const confidence = options.confidence ?? 0.95;
  const random = mulberry32(options.seed);
  const ratios = new Float64Array(iterations);
  const baseScratch = new Float64Array(baseline.length);
  const candScratch = new Float64Array(candidate.length);
  for (let i = 0; i < iterations; i++) {
    ratios[i] = resampledMedian(candidate, candScratch, random) / resampledMedian(baseline, baseScratch, random);
  }
  ratios.sort();
  const tail = (1 - confidence) / 2;
  const sorted = Array.from(ratios);
  return {
    ratio: median(candidate) / median(baseline),
    low: quantileSorted(sorted, tail),
    high: quantileSorted(sorted, 1 - tail),
  };
}

function resampledMedian(values: number[], scratch: Float64Array, random: () => number): number {
  for (let i = 0; i < values.length; i++) scratch[i] = values[Math.floor(random() * values.length)]!;
  scratch.sort();
  const mid = scratch.length >> 1;
  return scratch.length % 2 === 1 ? scratch[mid]! : (scratch[mid - 1]! + scratch[mid]!) / 2;
}

export interface RankSumResult {
  /** Two-sided p-value. */
  pValue: number;
  /** True when computed from the exact permutation distribution, false when Monte Carlo. */
  exact: boolean;
}

/** Above this many DP cells the exact distribution is too costly and a seeded Monte Carlo is used instead. */
const EXACT_DP_CELL_LIMIT = 20_000_000;

/**
 * Two-sided Wilcoxon–Mann–Whitney rank-sum permutation test (midranks for ties).
 *
 * Why this test: experiments have few trials per variant (3–5), where asymptotic approximations are wrong and a
 * difference-of-medians statistic has little power (many splits tie with the observed one). Ranks keep the test
 * robust to a single outlier trial. The permutation distribution of the candidate's rank sum is counted exactly
 * (dynamic programming over all C(n, k) splits), so p-values are exact for any realistic trial count; only very
 * large samples fall back to a seeded Monte Carlo over random splits.
 *
 * Note the floor this puts on small experiments: 3 vs 3 trials cannot go below p = 0.1, 4 vs 4 below 0.029.
 */
export function rankSumTest(baseline: number[], candidate: number[], options: { seed: number; iterations?: number }): RankSumResult {
  if (baseline.length === 0 || candidate.length === 0) throw new RangeError('rank-sum test needs at least one sample per group');
  const pooled = [...baseline, ...candidate];
  // Doubled midranks are integers, which lets the exact distribution be counted over integer sums.
  const doubledRanks = doubledMidranks(pooled);
  const k = candidate.length;
  const n = pooled.length;
  const observed = sum(doubledRanks.slice(baseline.length));
  const center = k * (n + 1); // doubled expected rank sum: 2 · k(n+1)/2
  const observedDeviation = Math.abs(observed - center);

  const totalDoubled = n * (n + 1);
  if ((k + 1) * (totalDoubled + 1) * n <= EXACT_DP_CELL_LIMIT) {
    const counts = subsetSumCounts(doubledRanks, k, totalDoubled);
    let extreme = 0;
    let total = 0;
    counts.forEach((count, s) => {
      total += count;
      if (Math.abs(s - center) >= observedDeviation) extreme += count;
    });
    return { pValue: Math.min(1, extreme / total), exact: true };
  }

  const iterations = options.iterations ?? 20_000;
  const random = mulberry32(options.seed);
  const shuffled = doubledRanks.slice();
  let extreme = 0;
  for (let i = 0; i < iterations; i++) {
    // Partial Fisher–Yates: the first k slots become a uniformly random candidate group.
    let s = 0;
    for (let j = 0; j < k; j++) {
      const pick = j + Math.floor(random() * (n - j));
      const tmp = shuffled[j]!;
      shuffled[j] = shuffled[pick]!;
      shuffled[pick] = tmp;
      s += shuffled[j]!;
    }
    if (Math.abs(s - center) >= observedDeviation) extreme++;
  }
  // +1 on both sides: the observed split is itself one of the permutations, and p is never 0.
  return { pValue: (extreme + 1) / (iterations + 1), exact: false };
}

/** counts[s] = number of size-k subsets of `values` (non-negative integers) summing to s. Floats: only ratios matter. */
function subsetSumCounts(values: number[], k: number, maxSum: number): Float64Array {
  // table[j] holds counts for subsets of size j, flattened as rows of length maxSum + 1.
  const width = maxSum + 1;
  const table = new Float64Array((k + 1) * width);
  table[0] = 1;
  for (const value of values) {
    for (let j = k; j >= 1; j--) {
      const row = j * width;
      const prev = (j - 1) * width;
      for (let s = maxSum; s >= value; s--) table[row + s]! += table[prev + s - value]!;
    }
  }
  return table.subarray(k * width);
}

function doubledMidranks(values: number[]): number[] {
  const order = values.map((value, index) => ({ value, index })).sort((a, b) => a.value - b.value);
  const ranks = new Array<number>(values.length);
  for (let start = 0; start < order.length; ) {
    let end = start;
    while (end + 1 < order.length && order[end + 1]!.value === order[start]!.value) end++;
    // Positions start..end (0-based) share the midrank ((start+1)+(end+1))/2; doubled: start+end+2.
    for (let i = start; i <= end; i++) ranks[order[i]!.index] = start + end + 2;
    start = end + 1;
  }
  return ranks;
}

function sum(values: number[]): number {
  return values.reduce((acc, value) => acc + value, 0);
}
