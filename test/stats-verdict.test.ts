import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { compareVariant } from '../src/experiment/analysis/verdict.js';
import { mulberry32, type Random, standardNormal } from '../src/util/random.js';

const normal = (random: Random, mean: number, sd: number): number => mean + sd * standardNormal(random);

describe('compareVariant', () => {
  test('clearly higher throughput, 5 vs 5 → significant, faster, ratio 1.2', () => {
    const verdict = compareVariant([100, 101, 99, 100.5, 99.5], [120, 119, 121, 120.5, 119.5], { alpha: 0.05, seed: 1, higherIsBetter: true });
    assert.equal(verdict.label, 'faster');
    assert.equal(verdict.significant, true);
    assert.equal(verdict.ratio, 1.2);
    assert.ok(verdict.pValue !== null && Math.abs(verdict.pValue - 2 / 252) < 1e-12);
    assert.ok(verdict.ciLow! > 1 && verdict.ciHigh! < 1.25);
    assert.deepEqual(verdict.n, { baseline: 5, candidate: 5 });
  });

  test('latency metric: higher candidate latency → slower', () => {
    const verdict = compareVariant([20, 21, 19, 20.5, 19.5], [30, 31, 29, 30.5, 29.5], { alpha: 0.05, seed: 1, higherIsBetter: false });
    assert.equal(verdict.label, 'slower');
    assert.equal(verdict.significant, true);
  });

  test('latency metric: lower candidate latency → faster', () => {
    const verdict = compareVariant([30, 31, 29, 30.5], [20, 21, 19, 20.5], { alpha: 0.05, seed: 1, higherIsBetter: false });
    assert.equal(verdict.label, 'faster');
  });

  test('3 vs 3 cannot reach alpha 0.05 even when separated (exact p = 0.1)', () => {
    const verdict = compareVariant([100, 101, 99], [150, 151, 149], { alpha: 0.05, seed: 1, higherIsBetter: true });
    assert.equal(verdict.label, 'no significant difference');
    assert.equal(verdict.significant, false);
    assert.ok(Math.abs(verdict.pValue! - 0.1) < 1e-12);
    assert.equal(verdict.ratio, 1.5);
  });

  test('same distribution: false-positive rate stays near alpha over 200 seeded 5-vs-5 experiments', () => {
    let significant = 0;
    for (let experiment = 0; experiment < 200; experiment++) {
      const random = mulberry32(experiment);
      const base = Array.from({ length: 5 }, () => normal(random, 100, 5));
      const cand = Array.from({ length: 5 }, () => normal(random, 100, 5));
      if (compareVariant(base, cand, { alpha: 0.05, seed: experiment, higherIsBetter: true, iterations: 1000 }).significant) significant++;
    }
    assert.ok(significant <= 20, `${significant}/200 significant`);
  });

  test('a significant but tiny change is not called when below minEffect', () => {
    const base = [100, 100.1, 99.9, 100.05, 99.95];
    const cand = [101, 101.1, 100.9, 101.05, 100.95];
    assert.equal(compareVariant(base, cand, { alpha: 0.05, seed: 1, higherIsBetter: true }).label, 'faster');
    const gated = compareVariant(base, cand, { alpha: 0.05, seed: 1, higherIsBetter: true, minEffect: 0.02 });
    assert.equal(gated.label, 'no significant difference');
    assert.equal(gated.significant, false);
  });

  test('fewer than 2 samples on a side → insufficient data (ratio still given when computable)', () => {
    const one = compareVariant([100], [120, 121], { alpha: 0.05, seed: 1, higherIsBetter: true });
    assert.equal(one.label, 'insufficient data');
    assert.equal(one.ratio, 1.205);
    assert.equal(one.pValue, null);
    assert.equal(one.ciLow, null);
    assert.deepEqual(one.n, { baseline: 1, candidate: 2 });
    assert.equal(compareVariant([], [1, 2], { alpha: 0.05, seed: 1, higherIsBetter: true }).ratio, null);
  });

  test('zero baseline median (everything failed) → insufficient data', () => {
    assert.equal(compareVariant([0, 0, 0], [5, 6, 7], { alpha: 0.05, seed: 1, higherIsBetter: true }).label, 'insufficient data');
  });
});
