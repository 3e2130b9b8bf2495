import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { openStore } from '../src/store/db.js';
import { listSearchSteps, type StoredSearchStep } from '../src/store/search.js';
import { tempDir } from './support-experiment.js';
import { FakeExecutor, type FakeMachine, fakeSearchFile } from './support-fake-executor.js';

/**
 * The search's stopping rules through the real runner, store and strategy on the fake machine: a clear winner and a
 * near-tie end the search early (resolved, most points never started), and a spent budget ends it with what is
 * unresolved in words. The responses are known; the strategy's own tests (search-strategy) drive it without a runner.
 */

const DEPTHS = 12;
const WIDTHS = [1, 2, 4, 8];
const POINTS = DEPTHS * WIDTHS.length;

async function runSearch(t: TestContext, name: string, machine: FakeMachine, budget?: Record<string, unknown>) {
  const dir = tempDir(t, name);
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  const file = fakeSearchFile(dir, {
    name: 'd{depth}-w{width}',
    knobs: { depth: { min: 1, max: DEPTHS }, width: WIDTHS },
    args: ['--depth', '{depth}', '--width', '{width}'],
    tolerance: '2%',
    ...(budget && { budget }),
  });
  const executor = new FakeExecutor(machine);
  const result = await runExperiment({ db, experiment: loadExperiment(file), executor, workDir: dir });
  await executor.close();
  assert.equal(result.status, 'done', result.message);
  const steps = listSearchSteps(db, 1);
  const done = steps.at(-1)?.done;
  assert.ok(done, 'the search ended by a decision');
  const started = new Set(executor.launches.map((spec) => spec.command.join(' ')));
  const drops = new Map(steps.flatMap((step: StoredSearchStep) => step.drop.map((entry) => [entry.point, entry.reason] as const)));
  return { steps, done, started: started.size, drops, leader: steps.at(-1)!.leaders.find((entry) => entry.level !== '*')! };
}

const depthOf = (call: Parameters<FakeMachine>[0]): number => Number(call.arg('--depth'));
const widthOf = (call: Parameters<FakeMachine>[0]): number => Number(call.arg('--width'));

describe('search stopping rules on the fake machine', () => {
  test('a clear winner ends the search early: resolved, most points never started', async (t) => {
    // depth 4, width 2 is fastest; every step away costs 6% of time per token.
    const { done, started, leader, steps } = await runSearch(t, 'search-clear', (call) => ({
      tpotMs: 5 * Math.exp(0.06 * (Math.abs(depthOf(call) - 4) + Math.abs(Math.log2(widthOf(call)) - 1))),
    }));
    assert.equal(done.resolved, true, done.reason);
    assert.match(done.reason, new RegExp(`within 2% of the best of ${POINTS} points`));
    assert.equal(leader.point, 'depth=4,width=2');
    assert.ok(started < POINTS / 2, `${started} of ${POINTS} points started in ${steps.length} blocks`);
  });

  test('a near-tie ends early: the tied points are settled as good or not better, not raced to a cap', async (t) => {
    // 18 points tie at the top (depth 4–9, width 1–4): every step away from them costs 6%.
    const tie = /^depth=[4-9],width=[124]$/;
    const { done, leader, drops, steps } = await runSearch(t, 'search-tie', (call) => ({
      tpotMs: 5 * Math.exp(0.06 * (Math.max(0, 4 - depthOf(call), depthOf(call) - 9) + Math.max(0, Math.log2(widthOf(call)) - 2))),
    }));
    assert.equal(done.resolved, true, done.reason);
    assert.match(leader.point, tie);
    assert.ok(steps.length <= 8, `decided after ${steps.length} steps`);
    const tied = [...drops].filter(([point]) => tie.test(point));
    assert.ok(tied.length >= 1, `another tied point was settled: ${steps.map((step) => `${step.measure.join(' ')} | ${step.done?.reason}`).join('\n')}`);
    for (const [point, reason] of tied) assert.match(reason, /^(as good|not better): single-stream: [+−]\d+\.\d% vs /, point);
  });

  test('a spent budget ends the search and says what is unresolved', async (t) => {
    // A flat response with a slow machine (each trial 150 ms of wall time): a 1-second budget ends after the first block.
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const { done, steps } = await runSearch(
      t,
      'search-budget',
      () => {
        Atomics.wait(pause, 0, 0, 150);
        return { tpotMs: 5 };
      },
      { wallTime: '1s' },
    );
    assert.equal(done.resolved, false);
    assert.match(done.reason, /^budget spent \(.+ of a 1.0 s budget\) before the search was decided/);
    assert.ok(done.unresolved.length > 0, 'what is unresolved is said');
    assert.match(done.unresolved.join('\n'), /may still beat a leader by more than 2%|unmeasured points? may beat a leader by more than 2%/);
    assert.equal(steps.length, 2, 'the budget was checked before the second block');
  });
});
