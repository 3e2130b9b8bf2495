import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { rankSumTest } from '../src/experiment/analysis/stats.js';
import { mulberry32, type Random, standardNormal } from '../src/util/random.js';

describe('rankSumTest (exact permutation distribution)', () => {
  test('fully separated 3 vs 3: only the 2 most extreme of C(6,3)=20 splits → p = 0.1', () => {
    const result = rankSumTest([1, 2, 3], [4, 5, 6], { seed: 1 });
    assert.equal(result.exact, true);
    assert.ok(Math.abs(result.pValue - 2 / 20) < 1e-12);
  });

  test('hand-computed case: candidate ranks {3,5,6} (sum 14, centre 10.5) → splits with sum ≤7 or ≥14 are 4 of 20', () => {
    // Sums ≤ 7: {1,2,3}=6, {1,2,4}=7. Sums ≥ 14: {3,5,6}=14, {4,5,6}=15.
    const result = rankSumTest([1, 2, 4], [3, 5, 6], { seed: 1 });
    assert.ok(Math.abs(result.pValue - 4 / 20) < 1e-12);
  });

  test('direction does not matter (two-sided)', () => {
    assert.equal(rankSumTest([4, 5, 6], [1, 2, 3], { seed: 1 }).pValue, rankSumTest([1, 2, 3], [4, 5, 6], { seed: 1 }).pValue);
  });

  test('fully separated 5 vs 5 → p = 2/252', () => {
    const result = rankSumTest([10, 11, 12, 13, 14], [20, 21, 22, 23, 24], { seed: 7 });
    assert.ok(Math.abs(result.pValue - 2 / 252) < 1e-12);
  });

  test('ties use midranks: identical samples → p = 1', () => {
    assert.equal(rankSumTest([5, 5, 5], [5, 5, 5], { seed: 1 }).pValue, 1);
  });

  test('ties across groups: [1,2,2] vs [2,3,4] counted over midranks', () => {
    // Pooled midranks: 1, 3, 3, 3, 5, 6 (doubled: 2,6,6,6,10,12). Candidate doubled sum 6+10+12 = 28, centre 21,
    // |dev| 7. Extreme splits: {6,10,12}×3 (28), {2,6,6}×3 (14) → 6 of 20; checked here by brute-force enumeration.
    const doubled = [2, 6, 6, 6, 10, 12];
    let extreme = 0;
    let total = 0;
    for (let a = 0; a < 6; a++)
      for (let b = a + 1; b < 6; b++)
        for (let c = b + 1; c < 6; c++) {
          total++;
          if (Math.abs(doubled[a]! + doubled[b]! + doubled[c]! - 21) >= 7) extreme++;
        }
    assert.equal(extreme, 6);
    assert.equal(total, 20);
    assert.ok(Math.abs(rankSumTest([1, 2, 2], [2, 3, 4], { seed: 1 }).pValue - 6 / 20) < 1e-12);
  });

  test('unequal sizes 2 vs 4 separated → 2/15', () => {
    // Candidate {3,4,5,6} ranks sum 18 = max; centre 14; the mirror sum 10 = {1,2,3,4}: 2 of C(6,4)=15 splits.
    assert.ok(Math.abs(rankSumTest([1, 2], [3, 4, 5, 6], { seed: 1 }).pValue - 2 / 15) < 1e-12);
  });
});

describe('rankSumTest (Monte Carlo for huge samples)', () => {
  const normal = (random: Random, mean: number, sd: number): number => mean + sd * standardNormal(random);

  test('large separated samples: Monte Carlo, p at its floor, reproducible with the seed', () => {
    const random = mulberry32(3);
    const a = Array.from({ length: 400 }, () => normal(random, 100, 5));
    const b = Array.from({ length: 400 }, () => normal(random, 110, 5));
    const first = rankSumTest(a, b, { seed: 11, iterations: 2000 });
    assert.equal(first.exact, false);
    assert.equal(first.pValue, 1 / 2001);
    assert.deepEqual(rankSumTest(a, b, { seed: 11, iterations: 2000 }), first);
  });

  test('large samples from one distribution: not significant', () => {
    const random = mulberry32(5);
    const a = Array.from({ length: 400 }, () => normal(random, 100, 5));
    const b = Array.from({ length: 400 }, () => normal(random, 100, 5));
    assert.ok(rankSumTest(a, b, { seed: 2, iterations: 2000 }).pValue > 0.05);
  });
});
