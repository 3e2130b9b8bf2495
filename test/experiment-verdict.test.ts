import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { RunOutcome } from '../src/experiment/run/run-store.js';
import { cli, tempDir, writeExperiment } from './support-experiment.js';

describe('servelab run: verdicts on the simulator', () => {
  test('speculative decoding on the simulator is found significantly faster', async (t) => {
    const dir = tempDir(t, 'verdict');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'spec.yaml', {
      name: 'spec-vs-plain',
      variants: { baseline: {}, 'spec-k3': { args: ['--spec-draft-tokens', '3', '--spec-acceptance', '0.8'] } },
    });
    const result = await cli(['run', file, '--json'], { store });
    assert.equal(result.code, 0, result.stderr);
    const outcome = JSON.parse(result.stdout) as RunOutcome;
    assert.equal(outcome.status, 'done');
    const [verdict] = outcome.verdicts!;
    assert.equal(verdict!.variant, 'spec-k3');
    assert.equal(verdict!.label, 'faster', JSON.stringify(verdict));
    assert.equal(verdict!.significant, true);
    assert.ok(verdict!.ratio! > 1.3, `ratio ${verdict!.ratio}`);
    assert.equal(verdict!.n.baseline, 4);
    // run --json, show --json and ls --json carry one conclusion object: the same verdict words, configs and ranking.
    const { conclusion, best } = JSON.parse(result.stdout);
    assert.equal(conclusion.verdicts[0].outcome, 'faster');
    assert.deepEqual(
      conclusion.configs.map((config: { variant: string; feasible: boolean }) => [config.variant, config.feasible]),
      [
        ['baseline', true],
        ['spec-k3', true],
      ],
    );
    assert.equal(best.winner, 'spec-k3');
    const shownJson = JSON.parse((await cli(['show', String(outcome.runId), '--json'], { store })).stdout);
    assert.deepEqual(shownJson.conclusion, conclusion);
    assert.deepEqual(shownJson.best, best);
    // Blocks, repetitions and plan positions count from 1 in --json too, as in the text and export.
    assert.deepEqual([...new Set(shownJson.trials.map((trial: { block: number }) => trial.block))].sort(), [1, 2, 3, 4]);
    const repetitions = shownJson.trials
      .filter((trial: { variant: string }) => trial.variant === 'spec-k3')
      .map((trial: { repetition: number }) => trial.repetition);
    assert.deepEqual(repetitions.sort(), [1, 2, 3, 4]);
    assert.deepEqual(
      shownJson.run.plan.trials.map((planned: { index: number }) => planned.index),
      Array.from({ length: 8 }, (_, index) => index + 1),
    );
    const [listedRun] = JSON.parse((await cli(['ls', '--json'], { store })).stdout);
    assert.deepEqual(listedRun.conclusion, conclusion);
    // Two server configs, four blocks: a restart per block boundary at most, not one per trial.
    const shown = await cli(['show', String(outcome.runId)], { store });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /2 server configs, 4 restarts/);
    assert.match(shown.stdout, /spec-k3\s+single-stream\s+.*faster/);
    const listed = await cli(['ls'], { store });
    assert.match(listed.stdout, new RegExp(`${outcome.runId}\\s+spec-vs-plain\\s+done\\s+.*8/8\\s+spec-k3@single-stream faster`));
  });

  test('the same server config under another name: "no significant difference", on one server', async (t) => {
    const dir = tempDir(t, 'verdict');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'same.yaml', {
      name: 'same-twice',
      verdict: { alpha: 0.05, minEffect: 0.05 },
      variants: { baseline: {}, 'baseline-renamed': {} },
    });
    const result = await cli(['run', file, '--json'], { store });
    assert.equal(result.code, 0, result.stderr);
    const outcome = JSON.parse(result.stdout) as RunOutcome;
    assert.equal(outcome.verdicts![0]!.label, 'no significant difference', JSON.stringify(outcome.verdicts));
    assert.equal(outcome.verdicts![0]!.significant, false);
    assert.equal(result.stderr.match(/starting server/g)?.length, 1, 'both variants share one server');
  });
});
