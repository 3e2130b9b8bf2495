import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { type Db, openStore } from '../src/store/db.js';
import { listSearchSteps } from '../src/store/search.js';
import { cli, tempDir } from './support-experiment.js';
import { FakeExecutor, type FakeMachine, fakeSearchFile } from './support-fake-executor.js';

/**
 * A search interrupted mid-block and resumed, on the fake machine (the real runner, store and strategy): the resume
 * finishes the block the stored step asked for before it asks the strategy again, every block is measured whole at
 * both levels, and no decision is made twice.
 */
/** Runs the search until the second block's step is stored and one of its trials is in, stops it, and resumes it to the end. */
async function interruptInSecondBlockAndResume(db: Db, file: string, dir: string, machine: FakeMachine): Promise<void> {
  const controller = new AbortController();
  const first = new FakeExecutor((call) => {
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
}

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
    await interruptInSecondBlockAndResume(db, file, dir, machine);

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

  test('trialsPerStart 2: each point runs 2 trials of each level back to back on its one start in a block', async (t) => {
    const dir = tempDir(t, 'search-per-start');
    const db = openStore(join(dir, 'servelab.db'));
    t.after(() => db.close());
    const file = fakeSearchFile(
      dir,
      { name: 'd{depth}', knobs: { depth: { min: 1, max: 6 } }, args: ['--depth', '{depth}'], tolerance: '2%', trialsPerStart: 2 },
      {
        workloads: [
          { kind: 'single-stream', requests: 3 },
          { kind: 'concurrency', concurrency: 4, requests: 4 },
        ],
      },
    );
    const executor = new FakeExecutor((call) => ({ tpotMs: 5 + 0.2 * Math.abs(Number(call.arg('--depth')) - 3) }));
    const result = await runExperiment({ db, experiment: loadExperiment(file), executor, workDir: dir });
    await executor.close();
    assert.equal(result.status, 'done', result.message);
    const steps = listSearchSteps(db, 1);
    const trials = db.prepare('SELECT variant, workload, block, repetition FROM trials WHERE run_id = 1 ORDER BY id').all() as Array<{
      variant: string;
      workload: string;
      block: number;
      repetition: number;
    }>;
    const measured = steps.reduce((sum, step) => sum + (step.done ? 0 : step.measure.length), 0);
    assert.ok(measured > 0);
    assert.equal(executor.launches.length, measured, 'one start per point per block');
    assert.equal(trials.length, measured * 2 * 2, '2 trials of each of the 2 levels per start');
    const slots = trials.map((trial) => JSON.stringify([trial.variant, trial.workload, trial.block, trial.repetition]));
    assert.equal(new Set(slots).size, slots.length, 'every trial its own slot');
    // A workload's two trials of a start run back to back.
    for (let i = 0; i < trials.length; i += 2) {
      const [a, b] = [trials[i]!, trials[i + 1]!];
      assert.deepEqual([a.variant, a.workload, a.block], [b.variant, b.workload, b.block], `trials ${i} and ${i + 1}`);
    }
  });

  test('trialsPerStart 2, interrupted between the two trials of a start and resumed: every block ends with 2 trials a level a point', async (t) => {
    const dir = tempDir(t, 'search-per-start-resume');
    const db = openStore(join(dir, 'servelab.db'));
    t.after(() => db.close());
    const file = fakeSearchFile(
      dir,
      { name: 'd{depth}', knobs: { depth: { min: 1, max: 6 } }, args: ['--depth', '{depth}'], tolerance: '2%', trialsPerStart: 2 },
      { workloads: [{ kind: 'single-stream', requests: 3 }] },
    );
    const planned = await cli(['plan', file], { store: join(dir, 'plan.db') });
    assert.equal(planned.code, 0, planned.stderr);
    assert.match(planned.stdout, /^one point at every level: .*\(a start and 2 trials, 2 per level\)/m);
    const machine: FakeMachine = (call) => ({ tpotMs: 5 + 0.2 * Math.abs(Number(call.arg('--depth')) - 3) });
    await interruptInSecondBlockAndResume(db, file, dir, machine);
    const trials = db.prepare('SELECT variant, workload, block, repetition FROM trials WHERE run_id = 1').all() as Array<{
      variant: string;
      block: number;
      repetition: number;
    }>;
    for (const step of listSearchSteps(db, 1)) {
      const inBlock = trials.filter((trial) => trial.block === step.block);
      assert.equal(inBlock.length, step.measure.length * 2, `block ${step.block + 1} measured whole`);
      for (const variant of new Set(inBlock.map((trial) => trial.variant)))
        assert.deepEqual(
          inBlock
            .filter((trial) => trial.variant === variant)
            .map((trial) => trial.repetition)
            .sort(),
          [step.block * 2, step.block * 2 + 1],
          `${variant} in block ${step.block + 1}`,
        );
    }
  });
});
