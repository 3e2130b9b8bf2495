import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { exitCodeFor, NotReadyError } from '../src/ready/errors.js';
import { formatPrediction, predictRemainingMs } from '../src/ready/predict.js';
import { formatProgressLine } from '../src/ready/progress.js';
import { DEFAULT_POLL_SCHEDULE, pollDelayMs } from '../src/ready/schedule.js';
import { normalizeBaseUrl } from '../src/ready/wait.js';
import { UserError } from '../src/util/errors.js';
import { formatSeconds } from '../src/util/format.js';

describe('poll schedule', () => {
  test('starts fast, doubles, and stops at the cap', () => {
    const delays = Array.from({ length: 8 }, (_, attempt) => pollDelayMs(attempt));
    assert.deepEqual(delays, [20, 40, 80, 80, 80, 80, 80, 80]);
    assert.ok(DEFAULT_POLL_SCHEDULE.capMs / 2 <= 100, 'mean detection delay at the cap stays within the 100 ms goal');
  });

  test('a custom schedule is honoured', () => {
    assert.equal(pollDelayMs(3, { initialMs: 10, factor: 3, capMs: 1000 }), 270);
    assert.equal(pollDelayMs(10, { initialMs: 10, factor: 3, capMs: 1000 }), 1000);
  });
});

describe('prediction text', () => {
  test('says when the last startup was ready and what is left', () => {
    assert.equal(formatPrediction(12_000, 42_000), 'last ready after 42s, ~30s left');
    assert.equal(formatPrediction(50_000, 42_000), 'last ready after 42s, 8.0s over');
    assert.equal(formatPrediction(1_000, undefined), undefined);
  });

  test('durations are compact', () => {
    assert.equal(formatSeconds(850), '850ms');
    assert.equal(formatSeconds(4_200), '4.2s');
    assert.equal(formatSeconds(185_000), '3m05s');
    assert.equal(formatSeconds(3_720_000), '1h02m');
  });

  test('the progress line shows elapsed, phase, prediction and detail', () => {
    const line = formatProgressLine({ elapsedMs: 12_000, phase: 'loading weights', previousReadyMs: 42_000, detail: '503: loading' });
    assert.equal(line, '[   12s] loading weights · last ready after 42s, ~30s left · 503: loading');
  });
});

describe('failures', () => {
  test('each kind has its exit code: timeout 3, died 4, interrupted 130', () => {
    assert.equal(exitCodeFor('timeout'), 3);
    assert.equal(exitCodeFor('process-exited'), 4);
    assert.equal(exitCodeFor('fatal-log'), 4);
    assert.equal(exitCodeFor('aborted'), 130);
    assert.equal(exitCodeFor('bad-response'), 1);
    const error = new NotReadyError('timeout', 'not ready', 'raise --timeout', { elapsedMs: 5, phases: [] });
    assert.ok(error instanceof UserError);
    assert.equal(error.exitCode, 3);
    assert.deepEqual(error.withLogTail(['a']).logTail, ['a']);
  });

  test('URLs are normalised; bad ones are usage errors', () => {
    assert.equal(normalizeBaseUrl('http://127.0.0.1:8000/'), 'http://127.0.0.1:8000');
    assert.equal(normalizeBaseUrl('http://127.0.0.1:8000/v1'), 'http://127.0.0.1:8000');
    assert.equal(normalizeBaseUrl('127.0.0.1:8000'), 'http://127.0.0.1:8000');
    assert.throws(
      () => normalizeBaseUrl('http://'),
      (error: UserError) => error.exitCode === 2,
    );
    assert.throws(
      () => normalizeBaseUrl('ftp://127.0.0.1:21'),
      (error: UserError) => error.exitCode === 2 && /scheme/.test(error.message),
    );
  });
});

describe('time-to-ready prediction', () => {
  const previousPhases = [
    { phase: 'waiting for health', startMs: 0, durationMs: 10_000 },
    { phase: 'loading weights', startMs: 10_000, durationMs: 50_000 },
    { phase: 'capturing CUDA graphs', startMs: 60_000, durationMs: 30_000 },
  ];

  test('without phase history it is last time-to-ready minus elapsed', () => {
    assert.equal(predictRemainingMs({ elapsedMs: 20_000, previousReadyMs: 90_000, phase: 'loading weights' }), 70_000);
  });

  test('a phase reached later than last time shifts the estimate instead of making it optimistic', () => {
    // Last time CUDA graphs started at 60 s and the server was ready 30 s later; this time they started at 100 s.
    const remaining = predictRemainingMs({
      elapsedMs: 110_000,
      previousReadyMs: 90_000,
      phase: 'capturing CUDA graphs',
      phaseStartMs: 100_000,
      previousPhases,
    });
    assert.equal(remaining, 20_000);
    assert.match(formatPrediction(110_000, 90_000, remaining) ?? '', /last ready after 1m30s, ~20s left/);
  });

  test('a phase the last startup never went through falls back to the total', () => {
    const remaining = predictRemainingMs({ elapsedMs: 5_000, previousReadyMs: 90_000, phase: 'listening', phaseStartMs: 4_000, previousPhases });
    assert.equal(remaining, 85_000);
  });
});
