/** The conclusion model's judgements on stored trials (pure: experiment files loaded, no server started). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bestConfig } from '../src/experiment/analysis/best.js';
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
