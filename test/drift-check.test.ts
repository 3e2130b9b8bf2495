import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { checkDrift, formatDriftAlarm } from '../src/experiment/drift.js';

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
    const result = checkDrift([86, 87], [88.8, 89.1, 88.5]);
    assert.equal(result.drifted, false);
    assert.ok(result.changePct < 0 && result.changePct > -5);
  });

  test('a noisy history widens the band beyond relativeBand', () => {
    // median 90, MAD 10 → band = 3 × 1.4826 × 10 / 90 ≈ 49.4%
    const result = checkDrift([70], [80, 100, 90, 110, 70]);
    assert.equal(result.drifted, false);
    assert.ok(Math.abs(result.band - (3 * 1.4826 * 10 * 100) / 90) < 1e-9);
    assert.equal(checkDrift([70], [80, 100, 90, 110, 70], { sigmas: 0.5 }).drifted, true);
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
    assert.equal(result.current, 62.95);
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
