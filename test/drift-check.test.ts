import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkDrift, formatDriftAlarm, studentQuantile } from '../src/experiment/analysis/drift.js';

describe('checkDrift', () => {
  test('a 29% drop against a tight history is drift', () => {
    const result = checkDrift([62.9], [88.8, 89.1, 88.5, 88.9, 88.7]);
    assert.equal(result.drifted, true);
    assert.equal(result.current, 62.9);
    assert.equal(result.reference, 88.8);
    assert.ok(Math.abs(result.changePct - ((62.9 - 88.8) / 88.8) * 100) < 1e-9);
    assert.equal(result.band, 5); // MAD band (3 × 1.4826 × 0.1 / 88.8 ≈ 0.5%) is below the 5% floor
  });

  test('within the relative band → no drift', () => {
    const result = checkDrift([86.5], [88.8, 89.1, 88.5]);
    assert.equal(result.drifted, false);
    assert.ok(result.changePct < 0 && result.changePct > -5);
  });

  test('a noisy history widens the band: beyond 20% it is reported as unguarded instead of passing silently', () => {
    // median 90, sample SD √250 (below 10 history trials the SD, not the MAD), n = 5: t(4) · SD · √(1 + 1/5) / 90 ≫ 20%
    const result = checkDrift([70], [80, 100, 90, 110, 70]);
    assert.equal(result.drifted, false);
    assert.equal(result.unguarded, 'history too noisy');
    assert.ok(result.band > 20);
    const expected = (studentQuantile(0.99865, 4) * Math.sqrt(250) * Math.sqrt(1 + 1 / 5) * 100) / 90;
    assert.ok(Math.abs(result.band - expected) / expected < 0.01, `${result.band} vs ${expected}`);
  });

  test("a change beyond even a noisy history's wide band is drift (measured on an H200: 54 vs 590 tok/s, band ±26%)", () => {
    // The quiet llama-server run's four trials, then a trial with a foreign process computing on the GPU.
    const result = checkDrift([53.8], [614, 576, 574, 595], { trialsInMean: 2 });
    assert.equal(result.unguarded, 'history too noisy');
    assert.ok(result.band > 20 && result.band < 40, String(result.band));
    assert.equal(result.drifted, true);
  });

  test('small histories get the Student band, large ones approach the normal one', () => {
    // Same spread (SD 1 on 100); the 3-trial history must tolerate far more than the 30-trial one.
    const small = checkDrift([100], [99, 100, 101], { relativeBand: 0 });
    const large = checkDrift(
      [100],
      Array.from({ length: 30 }, (_, i) => 100 + ((i % 3) - 1) * 1.2247),
      { relativeBand: 0 },
    );
    assert.ok(small.band > 3 * large.band, `${small.band} vs ${large.band}`);
    assert.ok(Math.abs(studentQuantile(0.975, 1000) - 1.96) < 0.01);
    assert.ok(Math.abs(studentQuantile(0.975, 2) - 4.303) < 0.01);
  });

  test('a history of fewer than 3 trials cannot guard', () => {
    const result = checkDrift([50], [100, 100]);
    assert.equal(result.drifted, false);
    assert.equal(result.unguarded, 'history too short');
  });

  test('the band of a two-trial mean is narrower than that of one trial', () => {
    const history = [100, 98, 102, 99, 101, 97, 103, 100];
    assert.ok(checkDrift([100], history, { relativeBand: 0, trialsInMean: 2 }).band < checkDrift([100], history, { relativeBand: 0 }).band);
  });

  test('an unexpected speed-up is drift too', () => {
    assert.equal(checkDrift([120], [100, 100, 100]).drifted, true);
  });

  test('custom relative band', () => {
    assert.equal(checkDrift([93], [100, 100, 100]).drifted, true, '7% > 5%');
    assert.equal(checkDrift([93], [100, 100, 100], { relativeBand: 0.1 }).drifted, false);
  });

  test('no history → not drifted, reference NaN', () => {
    const result = checkDrift([62.9, 63], []);
    assert.equal(result.drifted, false);
    assert.ok(Number.isNaN(result.reference));
    assert.equal(result.current, 62.95); // mean of the current trials
  });
});

describe('formatDriftAlarm', () => {
  test('environment differs: lists the changes', () => {
    const line = formatDriftAlarm({
      variant: 'baseline',
      metricLabel: 'tok/s',
      current: 62.9,
      reference: 88.8,
      changePct: ((62.9 - 88.8) / 88.8) * 100,
      changes: [
        { key: 'env.NCCL_PROTO', before: 'LL' },
        { key: 'env.NCCL_ALGO', before: 'Ring' },
      ],
    });
    assert.equal(line, 'baseline 62.9 tok/s vs 88.8 recorded (\u221229%); environment differs: NCCL_PROTO LL → (unset), NCCL_ALGO Ring → (unset)');
  });

  test('environment identical: points at hardware and load; positive change and large figures', () => {
    const line = formatDriftAlarm({ variant: 'eagle', metricLabel: 'tok/s', current: 1250.4, reference: 1100.2, changePct: 13.65, changes: [] });
    assert.equal(line, 'eagle 1,250 tok/s vs 1,100 recorded (+14%); environment identical — check the hardware / other load');
  });
});
