import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type BlockedValue, bootstrapBlockedRatio, rankSumTest, stratifiedRankSumTest } from '../src/experiment/analysis/stats.js';
import { compareBlocked, compareVariant } from '../src/experiment/analysis/verdict.js';

const inBlock = (block: number, values: number[]): BlockedValue[] => values.map((value) => ({ value, block }));

/** Reference: every within-block relabelling enumerated, van Elteren's weighted statistic on midranks. */
function bruteForceP(blocks: Array<{ baseline: number[]; candidate: number[] }>): number {
  const midranks = (values: number[]): number[] =>
    values.map((value) => values.filter((other) => other < value).length + (values.filter((other) => other === value).length + 1) / 2);
  const statistic = (pooled: number[], ranks: number[], chosen: number[]): number => {
    const n = pooled.length;
    const k = chosen.length;
    return (chosen.reduce((acc, index) => acc + ranks[index]!, 0) - (k * (n + 1)) / 2) / (n + 1);
  };
  const subsets = (n: number, k: number): number[][] =>
    k === 0 ? [[]] : n < k ? [] : [...subsets(n - 1, k - 1).map((subset) => [...subset, n - 1]), ...subsets(n - 1, k)];
  const perBlock = blocks.map(({ baseline, candidate }) => {
    const pooled = [...baseline, ...candidate];
    const ranks = midranks(pooled);
    const observed = statistic(
      pooled,
      ranks,
      candidate.map((_, index) => baseline.length + index),
    );
    return { observed, all: subsets(pooled.length, candidate.length).map((subset) => statistic(pooled, ranks, subset)) };
  });
  const observed = Math.abs(perBlock.reduce((acc, block) => acc + block.observed, 0));
  let totals = [0];
  for (const block of perBlock) totals = totals.flatMap((total) => block.all.map((value) => total + value));
  return totals.filter((total) => Math.abs(total) >= observed - 1e-9).length / totals.length;
}

describe('stratifiedRankSumTest (exact, labels permuted within blocks)', () => {
  test('complete separation in two 3-vs-3 blocks: p = 2 · (1/20)² = 0.005, below 0.05 / 7', () => {
    const result = stratifiedRankSumTest([...inBlock(0, [1, 2, 3]), ...inBlock(1, [11, 12, 13])], [...inBlock(0, [4, 5, 6]), ...inBlock(1, [14, 15, 16])], {
      seed: 1,
    });
    assert.equal(result.exact, true);
    assert.ok(Math.abs(result.pValue - 0.005) < 1e-12, String(result.pValue));
  });

  test('one block separated, one with a single swap: 3 of 400 splits as extreme each way → p = 0.015', () => {
    const result = stratifiedRankSumTest([...inBlock(0, [1, 2, 3]), ...inBlock(1, [1, 2, 4])], [...inBlock(0, [4, 5, 6]), ...inBlock(1, [3, 5, 6])], {
      seed: 1,
    });
    assert.ok(Math.abs(result.pValue - 6 / 400) < 1e-12, String(result.pValue));
  });

  test('unequal block sizes and ties: the same p as enumerating every within-block relabelling', () => {
    const blocks = [
      { baseline: [10, 12, 12, 15], candidate: [13, 16, 18] },
      { baseline: [7, 9], candidate: [9, 11] },
      { baseline: [20, 21, 25], candidate: [24, 26, 27, 30, 31] },
    ];
    const baseline = blocks.flatMap((block, index) => inBlock(index, block.baseline));
    const candidate = blocks.flatMap((block, index) => inBlock(index, block.candidate));
    const result = stratifiedRankSumTest(baseline, candidate, { seed: 1 });
    assert.equal(result.exact, true);
    assert.ok(Math.abs(result.pValue - bruteForceP(blocks)) < 1e-12, `${result.pValue} vs ${bruteForceP(blocks)}`);
    assert.equal(stratifiedRankSumTest(candidate, baseline, { seed: 1 }).pValue, result.pValue, 'two-sided');
  });

  test('a block with one group only is left out of the test', () => {
    const baseline = [...inBlock(0, [1, 2, 3]), ...inBlock(1, [11, 12, 13])];
    const candidate = [...inBlock(0, [4, 5, 6]), ...inBlock(1, [14, 15, 16])];
    const withExtra = [...candidate, ...inBlock(2, [0, 0.5])];
    assert.equal(stratifiedRankSumTest(baseline, withExtra, { seed: 1 }).pValue, stratifiedRankSumTest(baseline, candidate, { seed: 1 }).pValue);
  });
});

describe('blocked verdict: a shift between passes', () => {
  // Candidate 3% better within each pass; the machine got 10% slower between passes (drift).
  const baseline = [...inBlock(0, [100, 100.5, 101]), ...inBlock(1, [90, 90.5, 91])];
  const candidate = [...inBlock(0, [103, 103.5, 104]), ...inBlock(1, [92.7, 93.2, 93.7])];
  const options = { alpha: 0.05, seed: 1, higherIsBetter: true };

  test('breaks the pooled rank-sum test; the stratified one still sees complete separation', () => {
    const pooled = rankSumTest(
      baseline.map((entry) => entry.value),
      candidate.map((entry) => entry.value),
      { seed: 1 },
    );
    assert.ok(pooled.pValue > 0.05, `pooled p ${pooled.pValue}`);
    assert.ok(Math.abs(stratifiedRankSumTest(baseline, candidate, { seed: 1 }).pValue - 0.005) < 1e-12);
  });

  test('the effect is the within-pass ratio, and only the blocked verdict calls it', () => {
    const interval = bootstrapBlockedRatio(baseline, candidate, { seed: 1 })!;
    assert.ok(Math.abs(interval.ratio - Math.sqrt((103.5 / 100.5) * (93.2 / 90.5))) < 1e-12, String(interval.ratio));
    assert.ok(interval.low > 1 && interval.low <= interval.ratio && interval.ratio <= interval.high);
    const blocked = compareBlocked(baseline, candidate, options);
    assert.equal(blocked.label, 'faster');
    assert.deepEqual(blocked.n, { baseline: 6, candidate: 6 });
    const unstratified = compareVariant(
      baseline.map((entry) => entry.value),
      candidate.map((entry) => entry.value),
      options,
    );
    assert.equal(unstratified.label, 'no significant difference');
  });

  test('no shared block: insufficient data', () => {
    assert.equal(compareBlocked(inBlock(0, [1, 2, 3]), inBlock(1, [4, 5, 6]), options).label, 'insufficient data');
  });
});
