import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { openStore } from '../src/store/db.js';
import { listSearchSteps } from '../src/store/search.js';
import { tempDir } from './support-experiment.js';
import { FakeExecutor, type FakeMachine, fakeSearchFile } from './support-fake-executor.js';

/**
 * A search interrupted mid-block and resumed, on the fake machine (the real runner, store and strategy): the resume
 * finishes the block the stored step asked for before it asks the strategy again, every block is measured whole at
 * both levels, and no decision is made twice.
 */
describe('search resume', () => {
  test('interrupted in its second block, resumed to the end: blocks whole, steps once each, a best per level', async (t) => {
    const dir = tempDir(t, 'search-resume');
    const db = openStore(join(dir, 'servelab.db'));
    t.after(() => db.close());
    const file = fakeSearchFile(
      dir,
      {
        name: 'd{depth}-w{width}',
        knobs: { depth: { min: 1, max: 12 }, width: [1, 2, 4, 8] },
        args: ['--depth', '{depth}', '--width', '{width}'],
        tolerance: '2%',
      },
      {
        workloads: [
          { kind: 'single-stream', requests: 3 },
          { kind: 'concurrency', concurrency: 4, requests: 4 },
        ],
      },
    );
    // Fastest at depth 4, width 2 (time per token grows away from it), the same at both levels: several blocks.
    const machine: FakeMachine = (call) => ({
      tpotMs: 5 + 0.05 * (Number(call.arg('--depth')) - 4) ** 2 + 0.3 * Math.abs(Math.log2(Number(call.arg('--width'))) - 1),
    });
    const controller = new AbortController();
    const first = new FakeExecutor((call) => {
      // Stop in the middle of the second block: its step is stored and one of its trials is in.
      const inSecond = (db.prepare('SELECT COUNT(*) AS n FROM trials WHERE run_id = 1 AND block = 1').get() as { n: number }).n;
      if (listSearchSteps(db, 1).length === 2 && inSecond === 1) controller.abort();
      return machine(call);
    });
    const interrupted = await runExperiment({ db, experiment: loadExperiment(file), executor: first, workDir: dir, signal: controller.signal });
    await first.close();
    assert.equal(interrupted.status, 'interrupted', JSON.stringify(listSearchSteps(db, 1).map((step) => [step.measure, step.done])));
    assert.equal(listSearchSteps(db, 1).length, 2, 'stopped inside the second block');

    const second = new FakeExecutor(machine);
    const resumed = await runExperiment({ db, runId: 1, executor: second, workDir: dir });
    await second.close();
    assert.equal(resumed.status, 'done', resumed.message);

    const steps = listSearchSteps(db, 1);
    assert.deepEqual(
      steps.map((step) => step.block),
      steps.map((_, index) => index),
    );
    assert.ok(steps.at(-1)!.done, 'the search ended by a decision');
    const trials = db.prepare('SELECT variant, workload, block FROM trials WHERE run_id = 1').all() as Array<{
      variant: string;
      workload: string;
      block: number;
    }>;
    for (const step of steps) {
      const inBlock = trials.filter((trial) => trial.block === step.block);
      assert.equal(inBlock.length, step.measure.length * 2, `block ${step.block + 1} measured whole`);
    }
    const keys = trials.map((trial) => JSON.stringify([trial.variant, trial.workload, trial.block]));
    assert.equal(new Set(keys).size, keys.length, 'no trial measured twice');
    const leaders = steps.at(-1)!.leaders.filter((leader) => leader.level !== '*');
    assert.deepEqual(
      leaders.map((leader) => leader.level),
      ['single-stream', 'c=4'],
    );
    // Which point wins is the strategy's business (search-strategy tests it on known responses); a leader is a point.
    for (const leader of leaders) assert.match(leader.point, /^depth=\d+,width=\d$/, `${leader.level}: ${leader.point}`);
  });
});
