import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatDuration, formatNumber, formatShare } from '../src/util/format.js';

describe('util/format: the one place numbers become text', () => {
  test('durations: tenths below 10 s, then seconds, minutes and hours', () => {
    assert.equal(formatDuration(300), '0.3 s');
    assert.equal(formatDuration(4_200), '4.2 s');
    assert.equal(formatDuration(9_949), '9.9 s');
    assert.equal(formatDuration(9_950), '10 s');
    assert.equal(formatDuration(42_000), '42 s');
    assert.equal(formatDuration(185_000), '3 min 05 s');
    assert.equal(formatDuration(3_720_000), '1 h 02 min');
    assert.equal(formatDuration(Number.NaN), '—');
  });

  test('shares are whole unsigned percents; ratios and GPU-hours use formatNumber', () => {
    assert.equal(formatShare(0.713), '71%');
    assert.equal(formatShare(1), '100%');
    assert.equal(formatShare(undefined), '—');
    assert.equal(formatNumber(0.0512), '0.05');
    assert.equal(formatNumber(0.00031), '0.00031', 'a short run on one GPU is not "0.00" GPU-hours');
    assert.equal(formatNumber(0), '0.00');
    assert.equal(formatNumber(Number.POSITIVE_INFINITY), '—');
  });
});
