import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkDrift, driftDecision, driftStatus, formatDriftAlarm, judgeDrift, studentQuantile } from '../src/experiment/analysis/drift.js';

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
    // A spread of 3% is no noise problem: four trials are too few for the t quantile, more would narrow the band.
    assert.equal(result.unguarded, 'history too short');
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

describe('history too short vs too noisy', () => {
  // The H200 llama-server case: a 4-trial history, GGML_CUDA_DISABLE_GRAPHS set and the baseline 11.6% slower.
  const history = [614, 576, 574, 595];

  test('a 4-trial history of a steady server is too short, and says how many trials would do', () => {
    const result = checkDrift([585 * 0.884], history, { trialsInMean: 2 });
    assert.equal(result.drifted, false);
    assert.equal(result.unguarded, 'history too short');
    assert.ok(result.historyNeeded !== undefined && result.historyNeeded > 4 && result.historyNeeded <= 10, String(result.historyNeeded));
    // That many trials of the same spread do give a band within 20%.
    const longer = Array.from({ length: result.historyNeeded! }, (_, i) => history[i % 4]!);
    assert.ok(checkDrift([585], longer, { trialsInMean: 2 }).band <= 20);
  });

  test('the judgement states it: no "too noisy" for a short history', () => {
    const decision = judgeDrift([517], history, { confirmable: true })!;
    assert.equal(decision.kind, 'ok');
    assert.match(
      decision.reason,
      /^−12% is within the band ±26%, but the history is too short to guard against drift: 4 trials \(about 5 would narrow the band to 20%\)$/,
    );
    assert.equal(driftStatus(decision, history.length), 'history too short');
  });

  test('fewer than 3 trials: too short, at least 3 needed', () => {
    const decision = judgeDrift([50], [100, 101], { confirmable: true })!;
    assert.equal(decision.check.unguarded, 'history too short');
    assert.match(decision.reason, /at least 3 are needed/);
  });

  test('a spread no history length can tame is too noisy', () => {
    const result = checkDrift([100], [40, 160, 70, 130, 100, 55, 145]);
    assert.equal(result.unguarded, 'history too noisy');
    assert.equal(result.historyNeeded, undefined);
  });
});

describe('judgeDrift: one rule, stated reasons', () => {
  // Median 100, sample SD ≈ 4.3: the two-trial band is about ±25% with 5 history trials.
  const history = [100, 95, 105, 98, 103];
  const band = checkDrift([100], history, { trialsInMean: 2 }).band;

  test('the fixture band is about ±25%', () => {
    assert.ok(band > 15 && band < 35, String(band));
  });

  test('a mean beyond the band is not confirmed when the second trial is within it, and the rule says so', () => {
    const first = 100 * (1 - (band + 10) / 100);
    const second = 100 * (1 - (band - 5) / 100);
    const decision = judgeDrift([first, second], history, { confirmable: true })!;
    assert.equal(decision.kind, 'not-confirmed');
    // What is shown is the second trial, the one that did not confirm: within the band, consistently.
    assert.equal(decision.check.drifted, false);
    assert.ok(Math.abs(decision.check.changePct) < decision.check.band);
    assert.match(
      decision.reason,
      /^first trial −\d+% is beyond the band ±\d+%, but the second trial −\d+% is within the band ±\d+%: one trial beyond it does not stop a run$/,
    );
    assert.equal(driftStatus(decision, history.length), 'not confirmed');
  });

  test('both trials beyond the band on the same side: alarm on their mean', () => {
    const slow = 100 * (1 - (band + 5) / 100);
    const decision = judgeDrift([slow, slow], history, { confirmable: true })!;
    assert.equal(decision.kind, 'alarm');
    assert.equal(decision.trials, 2);
    assert.ok(decision.check.drifted);
    assert.equal(driftStatus(decision, history.length), 'DRIFT');
  });

  test('beyond on opposite sides: not confirmed, as noise', () => {
    const decision = judgeDrift([100 * (1 - (band + 5) / 100), 100 * (1 + (band + 5) / 100)], history, { confirmable: true })!;
    assert.equal(decision.kind, 'not-confirmed');
    assert.match(decision.reason, /on the other side: noise, not a shift/);
  });

  test('a first trial within the band decides the pair; the runner sees nothing new at the second', () => {
    const own = [100, 50];
    assert.equal(judgeDrift(own, history, { confirmable: true })!.kind, 'ok');
    assert.equal(judgeDrift(own, history, { confirmable: true })!.trials, 1);
    assert.equal(driftDecision(own, history, { confirmable: true }), undefined);
    assert.equal(driftDecision([50], history, { confirmable: true })!.kind, 'suspect');
    assert.equal(driftDecision([50, 50, 50], history, { confirmable: true }), undefined);
  });

  test('a pair planned with one trial is judged on it with the one-trial band', () => {
    const decision = judgeDrift([40], history, { confirmable: false })!;
    assert.equal(decision.kind, 'alarm');
    assert.ok(decision.check.band > band);
  });

  test('no history: ok, and says so', () => {
    const decision = judgeDrift([40], [], { confirmable: true })!;
    assert.equal(decision.kind, 'ok');
    assert.equal(decision.reason, 'no history to compare with');
    assert.equal(driftStatus(decision, 0), 'no history');
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
