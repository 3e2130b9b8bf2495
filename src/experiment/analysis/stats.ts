import { median, quantileSorted } from 'simple-statistics';
import { mulberry32 } from '../../util/random.js';

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

/** One trial's value and the block (pass) it was measured in. */
export interface BlockedValue {
  value: number;
  block: number;
}

interface Stratum {
  baseline: number[];
  candidate: number[];
}

/** Blocks in which both groups have trials, in block order; a block with one group only says nothing about the difference. */
export function sharedStrata(baseline: readonly BlockedValue[], candidate: readonly BlockedValue[]): Stratum[] {
  const blocks = [...new Set(baseline.map((entry) => entry.block))].filter((block) => candidate.some((entry) => entry.block === block)).sort((a, b) => a - b);
  const valuesIn = (entries: readonly BlockedValue[], block: number): number[] => entries.filter((entry) => entry.block === block).map((entry) => entry.value);
  return blocks.map((block) => ({ baseline: valuesIn(baseline, block), candidate: valuesIn(candidate, block) }));
}

/** Above this many distinct values of the exact stratified distribution, a seeded Monte Carlo is used instead. */
const EXACT_SUPPORT_LIMIT = 1_000_000;

/**
 * Two-sided stratified rank-sum permutation test (van Elteren's statistic, exact): labels are permuted within each
 * block only, and the statistic sums each block's centered candidate rank sum weighted by 1 / (block size + 1).
 *
 * Why: a blocked schedule runs every config once per pass, so a drift of the machine shifts all of a pass's trials
 * alike. Pooled over passes, that shift mixes into each config's spread and a pooled rank-sum loses the separation
 * it needs; compared within each pass the shift cancels. The exact distribution is the convolution of the blocks'
 * rank-sum distributions (weights scaled to integers); only very large designs fall back to a seeded Monte Carlo.
 *
 * Floor: with blocks of n vs n trials the p-value can't go below 2 / Π C(2n, n): 3 + 3 vs 3 + 3 gives 0.005.
 */
export function stratifiedRankSumTest(
  baseline: readonly BlockedValue[],
  candidate: readonly BlockedValue[],
  options: { seed: number; iterations?: number },
): RankSumResult {
  const strata = sharedStrata(baseline, candidate);
  if (strata.length === 0) throw new RangeError('stratified rank-sum test needs a block with samples of both groups');
  const sizes = strata.map((stratum) => stratum.baseline.length + stratum.candidate.length);
  // Integer weights L / (N_b + 1) keep the statistic on integers, so the exact distribution has exact keys.
  const scale = sizes.reduce((acc, size) => lcm(acc, size + 1), 1);
  const blocks = strata.map((stratum, index) => {
    const n = sizes[index]!;
    const ranks = doubledMidranks([...stratum.baseline, ...stratum.candidate]);
    const k = stratum.candidate.length;
    return { ranks, k, n, weight: scale / (n + 1), center: k * (n + 1) };
  });
  const observed = Math.abs(blocks.reduce((acc, block) => acc + block.weight * (sum(block.ranks.slice(block.ranks.length - block.k)) - block.center), 0));

  const exact = exactStratifiedDistribution(blocks);
  if (exact) {
    let extreme = 0;
    for (const [statistic, probability] of exact) if (Math.abs(statistic) >= observed) extreme += probability;
    return { pValue: Math.min(1, extreme), exact: true };
  }
  const iterations = options.iterations ?? 20_000;
  const random = mulberry32(options.seed);
  const shuffled = blocks.map((block) => block.ranks.slice());
  let extreme = 0;
  for (let i = 0; i < iterations; i++) {
    let statistic = 0;
    blocks.forEach((block, index) => {
      const ranks = shuffled[index]!;
      let s = 0;
      for (let j = 0; j < block.k; j++) {
        const pick = j + Math.floor(random() * (block.n - j));
        const tmp = ranks[j]!;
        ranks[j] = ranks[pick]!;
        ranks[pick] = tmp;
        s += ranks[j]!;
      }
      statistic += block.weight * (s - block.center);
    });
    if (Math.abs(statistic) >= observed) extreme++;
  }
  return { pValue: (extreme + 1) / (iterations + 1), exact: false };
}

/** Probability of each value of the weighted statistic, by convolving the blocks' exact distributions; undefined when too large. */
function exactStratifiedDistribution(
  blocks: ReadonlyArray<{ ranks: number[]; k: number; n: number; weight: number; center: number }>,
): Map<number, number> | undefined {
  let distribution = new Map<number, number>([[0, 1]]);
  for (const block of blocks) {
    const maxSum = block.n * (block.n + 1);
    if ((block.k + 1) * (maxSum + 1) * block.n > EXACT_DP_CELL_LIMIT) return undefined;
    const counts = subsetSumCounts(block.ranks, block.k, maxSum);
    const total = counts.reduce((acc, count) => acc + count, 0);
    const next = new Map<number, number>();
    for (const [statistic, probability] of distribution) {
      counts.forEach((count, s) => {
        if (count === 0) return;
        const key = statistic + block.weight * (s - block.center);
        next.set(key, (next.get(key) ?? 0) + (probability * count) / total);
      });
      if (next.size > EXACT_SUPPORT_LIMIT) return undefined;
    }
    distribution = next;
  }
  return distribution;
}

/**
 * Percentile-bootstrap CI of the blocked ratio: the weighted geometric mean over shared blocks of
 * median(candidate) / median(baseline) within the block (weights m·k / (m + k), each block's information), each
 * group resampled within its block. So the effect, like the test, compares configs only within a pass.
 * Undefined when a block's median is not positive (no ratio to take).
 */
export function bootstrapBlockedRatio(
  baseline: readonly BlockedValue[],
  candidate: readonly BlockedValue[],
  options: { iterations?: number; confidence?: number; seed: number },
): RatioInterval | undefined {
  const strata = sharedStrata(baseline, candidate);
  if (strata.length === 0) return undefined;
  const weights = strata.map((stratum) => (stratum.baseline.length * stratum.candidate.length) / (stratum.baseline.length + stratum.candidate.length));
  const totalWeight = sum(weights);
  const blockedRatio = (medians: Array<{ baseline: number; candidate: number }>): number =>
    Math.exp(medians.reduce((acc, pair, index) => acc + weights[index]! * Math.log(pair.candidate / pair.baseline), 0) / totalWeight);
  const observed = strata.map((stratum) => ({ baseline: median(stratum.baseline), candidate: median(stratum.candidate) }));
  if (observed.some((pair) => !(pair.baseline > 0 && pair.candidate > 0 && Number.isFinite(pair.baseline) && Number.isFinite(pair.candidate))))
    return undefined;
  const iterations = options.iterations ?? 10_000;
  const confidence = options.confidence ?? 0.95;
  const random = mulberry32(options.seed);
  const scratch = strata.map((stratum) => ({ baseline: new Float64Array(stratum.baseline.length), candidate: new Float64Array(stratum.candidate.length) }));
  const ratios = new Float64Array(iterations);
  for (let i = 0; i < iterations; i++) {
    ratios[i] = blockedRatio(
      strata.map((stratum, index) => ({
        candidate: resampledMedian(stratum.candidate, scratch[index]!.candidate, random),
        baseline: resampledMedian(stratum.baseline, scratch[index]!.baseline, random),
      })),
    );
  }
  ratios.sort();
  const sorted = Array.from(ratios);
  const tail = (1 - confidence) / 2;
  return { ratio: blockedRatio(observed), low: quantileSorted(sorted, tail), high: quantileSorted(sorted, 1 - tail) };
}

function lcm(a: number, b: number): number {
  let [x, y] = [a, b];
  while (y !== 0) [x, y] = [y, x % y];
  return (a / x) * b;
}
