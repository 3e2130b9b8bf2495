import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { bootstrapRatioOfMedians } from '../src/experiment/analysis/stats.js';
import { mulberry32, type Random, standardNormal } from '../src/util/random.js';

const normal = (random: Random, mean: number, sd: number): number => mean + sd * standardNormal(random);

describe('mulberry32', () => {
  test('same seed → same sequence; different seed → different; values in [0,1)', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const c = mulberry32(43);
    const first = Array.from({ length: 5 }, () => a());
    assert.deepEqual(
      Array.from({ length: 5 }, () => b()),
      first,
    );
    assert.notDeepEqual(
      Array.from({ length: 5 }, () => c()),
      first,
    );
    const random = mulberry32(1);
    for (let i = 0; i < 10_000; i++) {
      const value = random();
      assert.ok(value >= 0 && value < 1);
    }
  });
});

describe('bootstrapRatioOfMedians', () => {
  test('ratio is median(candidate)/median(baseline) and lies inside the interval', () => {
    const result = bootstrapRatioOfMedians([100, 102, 98, 101, 99], [120, 123, 118, 121, 119], { seed: 1 });
    assert.equal(result.ratio, 120 / 100);
    assert.ok(result.low <= result.ratio && result.ratio <= result.high);
    // Each resampled median is one of the observed values, so the interval is bounded by extreme ratios.
    assert.ok(result.low >= 118 / 102 && result.high <= 123 / 98);
    assert.ok(result.low > 1);
  });

  test('reproducible for a seed', () => {
    const base = [10, 12, 11, 13, 9, 10.5];
    const cand = [11, 12.5, 10, 14, 11.5, 12];
    assert.deepEqual(bootstrapRatioOfMedians(base, cand, { seed: 9 }), bootstrapRatioOfMedians(base, cand, { seed: 9 }));
  });

  test('a wider confidence level gives a wider interval', () => {
    const random = mulberry32(4);
    const base = Array.from({ length: 15 }, () => normal(random, 100, 10));
    const cand = Array.from({ length: 15 }, () => normal(random, 105, 10));
    const narrow = bootstrapRatioOfMedians(base, cand, { seed: 2, confidence: 0.8 });
    const wide = bootstrapRatioOfMedians(base, cand, { seed: 2, confidence: 0.99 });
    assert.ok(wide.low <= narrow.low && wide.high >= narrow.high);
    assert.ok(wide.high - wide.low > narrow.high - narrow.low);
  });

  test('the 95% interval covers the true ratio 1.2 in most of 100 seeded experiments of 25 vs 25', () => {
    let covered = 0;
    for (let experiment = 0; experiment < 100; experiment++) {
      const random = mulberry32(1000 + experiment);
      const base = Array.from({ length: 25 }, () => normal(random, 100, 8));
      const cand = Array.from({ length: 25 }, () => normal(random, 120, 8));
      const { low, high } = bootstrapRatioOfMedians(base, cand, { seed: experiment, iterations: 2000 });
      if (low <= 1.2 && 1.2 <= high) covered++;
    }
    assert.ok(covered >= 85, `covered ${covered}/100`);
  });

  test('empty group is a programming error', () => {
    assert.throws(() => bootstrapRatioOfMedians([], [1], { seed: 1 }), RangeError);
  });
});
