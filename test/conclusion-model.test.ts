/** The conclusion model's judgements on stored trials (pure: experiment files loaded, no server started). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bestConfig } from '../src/experiment/analysis/best.js';
import { floorPValue, significanceWarning } from '../src/experiment/plan/significance.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { formatBestVerdict } from '../src/experiment/text/best-format.js';
import { tempDir, writeExperiment } from './support-experiment.js';
import { trialRecord } from './support-trial-record.js';

test('the best-config headline and its vs-baseline line agree: both Holm-corrected (4 vs 4 trials, 3 configs)', (t) => {
  const dir = tempDir(t, 'conclusion-holm');
  const experiment = loadExperiment(writeExperiment(dir, 'holm.yaml', { variants: { baseline: {}, 'spec-good': {}, 'spec-bad': {} } }));
  // Fully separated samples: the exact rank-sum test's smallest p for 4 vs 4 (2/70 = 0.029), × 3 pairs by Holm.
  const trials = ['baseline', 'spec-good', 'spec-bad'].flatMap((variant, index) =>
    [0, 1, 2, 3].map((repetition) => trialRecord(variant, 'single-stream', { outputTokensPerSecond: [100, 320, 150][index]! + repetition })),
  );
  const best = bestConfig(experiment, trials);
  assert.equal(best.winner, 'spec-good');
  assert.match(best.conclusion, /^spec-good ranks first, but is not significantly better than spec-bad, baseline$/);
  assert.ok(best.vsBaseline!.pValue! < 0.05 && best.vsBaseline!.pAdjusted! >= 0.05, JSON.stringify(best.vsBaseline));
  assert.equal(best.vsBaseline!.significant, false);
  assert.equal(best.vsBaseline!.label, 'no significant difference');
  const text = formatBestVerdict(experiment, best);
  assert.match(text, /vs the baseline \(baseline\): \+2\d\d\.\d% \(CI .*, p 0\.029, Holm p 0\.0\d+, n 4\/4\): no significant difference/);
  assert.doesNotMatch(text, /\): faster/);
});

test('plan warns when the trials asked for cannot reach significance, vs the baseline or after Holm, and says how many would', (t) => {
  const dir = tempDir(t, 'conclusion-plan');
  const experimentWith = (trials: number, variants: Record<string, object>) =>
    loadExperiment(writeExperiment(dir, `plan-${trials}-${Object.keys(variants).length}.yaml`, { trials, variants }));
  const three = { baseline: {}, 'spec-good': {}, 'spec-bad': {} };
  // 4 vs 4 pooled: p ≥ 2/70 = 0.029, × 3 pairs = 0.086; 5 vs 5: 2/252 × 3 = 0.024.
  assert.match(
    significanceWarning(experimentWith(4, three), false)!,
    /^with trials: 4 and 3 configs the best config cannot be significantly better than another: Holm's correction over 3 pairs makes the smallest possible p 0\.029 × 3 = 0\.086 ≥ α 0\.05 .*; trials: 5 would$/,
  );
  assert.equal(significanceWarning(experimentWith(5, three), false), undefined);
  // Two configs, no Holm: 3 vs 3 cannot reach 0.05 (p ≥ 0.1), 4 vs 4 can.
  assert.match(
    significanceWarning(experimentWith(3, { baseline: {}, other: {} }), false)!,
    /^with trials: 3 no verdict can be significant: .*p 0\.100 ≥ α 0\.05 .*; trials: 4 would$/,
  );
  assert.equal(significanceWarning(experimentWith(4, { baseline: {}, other: {} }), false), undefined);
  // Blocked in two passes of 2: stratified, p ≥ 2/36 = 0.056 even fully separated.
  assert.match(
    significanceWarning(experimentWith(4, { baseline: {}, other: {} }), true)!,
    /no verdict can be significant: the exact rank-sum test \(stratified by pass\) gives at least p 0\.056/,
  );
  assert.equal(floorPValue(experimentWith(4, three), 4, false), 2 / 70);
});
