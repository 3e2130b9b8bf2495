import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countRestarts, planExperiment, serverKeysOf } from '../src/experiment/plan/plan.js';
import type { Plan } from '../src/experiment/spec/types.js';

const pairsOf = (plan: Plan, block: number): string[] =>
  plan.trials
    .filter((trial) => trial.block === block)
    .map((trial) => `${trial.variant}|${trial.workload}`)
    .sort();

describe('planExperiment', () => {
  const input = {
    variants: [
      { name: 'baseline', serverKey: 'A' },
      { name: 'eagle3-steps2', serverKey: 'B' },
      { name: 'eagle3-steps3', serverKey: 'C' },
      // Client-side-only variant: same server as the baseline.
      { name: 'baseline-long-prompts', serverKey: 'A' },
    ],
    workloads: ['single-stream', 'c=8'],
    repetitions: 5,
    seed: 42,
  };

  test('every block runs every (variant, workload) pair exactly once', () => {
    const plan = planExperiment(input);
    assert.equal(plan.trials.length, 4 * 2 * 5);
    const expected = input.variants.flatMap((v) => input.workloads.map((w) => `${v.name}|${w}`)).sort();
    for (let block = 0; block < 5; block += 1) assert.deepEqual(pairsOf(plan, block), expected);
    assert.deepEqual(
      plan.trials.map((trial) => trial.index),
      plan.trials.map((_, index) => index),
    );
    for (const trial of plan.trials) assert.equal(trial.repetition, trial.block);
  });

  test('within a block each server config is visited once, and consecutive blocks share the boundary server', () => {
    const plan = planExperiment(input);
    for (let block = 0; block < 5; block += 1) {
      const keys = plan.trials.filter((trial) => trial.block === block).map((trial) => trial.serverKey);
      const stretches = keys.filter((key, i) => i === 0 || keys[i - 1] !== key);
      assert.equal(stretches.length, 3, `block ${block} visits A, B, C once each: ${stretches.join('')}`);
      if (block > 0) {
        const previousLast = plan.trials.filter((trial) => trial.block === block - 1).at(-1)!.serverKey;
        assert.equal(keys[0], previousLast);
      }
    }
  });

  test('restarts = blocks × (servers − 1): far fewer than one per trial', () => {
    const plan = planExperiment(input);
    assert.equal(plan.restarts, 5 * (3 - 1));
    assert.equal(plan.restarts, countRestarts(plan.trials));
    const oneServer = planExperiment({
      ...input,
      variants: [
        { name: 'a', serverKey: 'S' },
        { name: 'b', serverKey: 'S' },
      ],
    });
    assert.equal(oneServer.restarts, 0);
  });

  test('variants are interleaved: no variant has all its trials before another starts', () => {
    const plan = planExperiment({
      ...input,
      variants: [
        { name: 'a', serverKey: 'S' },
        { name: 'b', serverKey: 'S' },
      ],
      workloads: ['w'],
      repetitions: 6,
    });
    const order = plan.trials.map((trial) => trial.variant);
    assert.ok(order.lastIndexOf('a') > order.indexOf('b') && order.lastIndexOf('b') > order.indexOf('a'), order.join(','));
    // Randomized within blocks: over 6 blocks the first trial is not always the same variant.
    const firsts = new Set([0, 1, 2, 3, 4, 5].map((block) => plan.trials.find((trial) => trial.block === block)!.variant));
    assert.equal(firsts.size, 2, `block openers ${[...firsts].join(',')}`);
  });

  test('the same seed gives the same plan, another seed another order', () => {
    assert.deepEqual(planExperiment(input), planExperiment(input));
    const other = planExperiment({ ...input, seed: 43 });
    assert.notDeepEqual(
      other.trials.map((trial) => trial.variant + trial.workload),
      planExperiment(input).trials.map((trial) => trial.variant + trial.workload),
    );
    assert.equal(other.restarts, planExperiment(input).restarts);
  });

  test('serverKeysOf lists each server config once, in first-use order', () => {
    const plan = planExperiment(input);
    const keys = serverKeysOf(plan);
    assert.deepEqual([...keys].sort(), ['A', 'B', 'C']);
    assert.equal(keys[0], plan.trials[0]!.serverKey);
  });
});
