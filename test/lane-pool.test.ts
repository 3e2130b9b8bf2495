import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadCostModel, predictPlan, startupKeyOf } from '../src/experiment/plan/budget.js';
import { LanePool, leadingStretch } from '../src/experiment/plan/lane-pool.js';
import { planExperiment } from '../src/experiment/plan/plan.js';
import { laneServer } from '../src/experiment/spec/lane-server.js';
import type { PlannedTrial, ResolvedExperiment, ServerConfig } from '../src/experiment/spec/types.js';
import { openStore } from '../src/store/db.js';
import { recordStartup } from '../src/store/startups.js';
import { pairKey } from '../src/util/trial-keys.js';

const variants = [
  { name: 'baseline', serverKey: 'A' },
  { name: 'fast', serverKey: 'B' },
  { name: 'faster', serverKey: 'C' },
];
const plan = planExperiment({ variants, workloads: ['c=1'], repetitions: 6, seed: 3 });

/** Every stretch a pool hands out, lanes taking turns as they would if every stretch took as long. */
function drain(pool: LanePool, lanes: number): Array<{ lane: number; stretch: PlannedTrial[] }> {
  const taken: Array<{ lane: number; stretch: PlannedTrial[] }> = [];
  const open = new Set(Array.from({ length: lanes }, (_, lane) => lane));
  while (open.size > 0) {
    for (const lane of [...open]) {
      const stretch = pool.take(lane);
      pool.finished(lane);
      if (stretch.length === 0) open.delete(lane);
      else taken.push({ lane, stretch });
    }
  }
  return taken;
}

describe('lane pool', () => {
  test('one lane runs the plan in order, a stretch across blocks included (as the runner did before lanes)', () => {
    const taken = drain(new LanePool(plan.trials, 1), 1);
    const expected: PlannedTrial[][] = [];
    for (let queue = plan.trials; queue.length > 0; ) {
      const stretch = leadingStretch(queue);
      expected.push(stretch);
      queue = queue.slice(stretch.length);
    }
    assert.deepEqual(
      taken.map((entry) => entry.stretch),
      expected,
    );
    assert.equal(taken.length, plan.restarts + 1);
  });

  test('two lanes: every block on one lane, every config in each, every trial once; a stretch reaches one more block at most', () => {
    const taken = drain(new LanePool(plan.trials, 2), 2);
    const laneOfBlock = new Map<number, Set<number>>();
    for (const { lane, stretch } of taken) {
      assert.ok(new Set(stretch.map((trial) => trial.block)).size <= 2);
      for (const trial of stretch) laneOfBlock.set(trial.block, (laneOfBlock.get(trial.block) ?? new Set()).add(lane));
    }
    for (const lanes of laneOfBlock.values()) assert.equal(lanes.size, 1);
    assert.deepEqual(new Set([...laneOfBlock.values()].map((lanes) => [...lanes][0])), new Set([0, 1]));
    const all = taken.flatMap((entry) => entry.stretch.map((trial) => trial.index)).sort((a, b) => a - b);
    assert.deepEqual(
      all,
      plan.trials.map((trial) => trial.index),
    );
  });

  test('a lane that dies gives its unmeasured trials and its blocks back; the other lane takes them', () => {
    const pool = new LanePool(plan.trials, 2);
    const first = pool.take(0);
    const second = pool.take(1);
    assert.notEqual(first[0]!.block, second[0]!.block);
    pool.release(1, second.slice(1));
    const rest = drain(pool, 1);
    const measured = [...first, second[0]!, ...rest.flatMap((entry) => entry.stretch)].map((trial) => trial.index).sort((a, b) => a - b);
    assert.deepEqual(
      measured,
      plan.trials.map((trial) => trial.index),
    );
  });

  test('the prediction divides by lanes: the time of the slowest lane, the starts lanes need, GPU-hours of every lane', () => {
    const experiment = { variants: variants.map((variant) => ({ ...variant, server: {} })), lanes: undefined } as unknown as ResolvedExperiment;
    const costs = {
      startups: Object.fromEntries(variants.map((variant) => [variant.serverKey, { ms: 60_000, source: 'history' as const, samples: 1 }])),
      trials: Object.fromEntries(
        variants.map((variant) => [pairKey({ variant: variant.name, workload: 'c=1' }), { ms: 120_000, source: 'history' as const, samples: 1 }]),
      ),
    };
    const one = predictPlan(plan, experiment, costs);
    const laned = { ...experiment, lanes: [0, 1].map((index) => ({ name: `lane${index + 1}`, env: {} })) };
    const two = predictPlan(plan, laned, costs);
    assert.equal(one.wallMs, one.starts * 60_000 + 18 * 120_000);
    assert.equal(one.lanes, undefined);
    assert.equal(two.lanes, 2);
    // Each lane starts every config of its blocks (the last of a block shares its server with the next block's).
    assert.ok(two.starts > one.starts);
    assert.ok(two.wallMs! < 0.6 * one.wallMs!, `${two.wallMs} vs ${one.wallMs}`);
    assert.equal(two.gpuHours, (two.wallMs! / 3_600_000) * 2);
    // Each lane's share: its starts and trials add up to the plan's, the wall time is the slowest lane's busy time.
    const shares = two.laneShares!;
    assert.deepEqual(
      shares.map((share) => share.name),
      ['lane1', 'lane2'],
    );
    assert.equal(shares[0]!.starts + shares[1]!.starts, two.starts);
    assert.equal(shares[0]!.trials + shares[1]!.trials, 18);
    assert.equal(two.wallMs, Math.max(...shares.map((share) => share.ms!)));
    for (const share of shares) assert.equal(share.ms, share.starts * 60_000 + share.trials * 120_000);
    // A lane's first start is no restart; the extra starts are those the lanes add to one lane's.
    assert.equal(two.restarts, two.starts - 2);
    assert.equal(two.oneLaneStarts, one.starts);
    assert.equal(one.restarts, one.starts - 1);
  });

  test("the prediction finds a config's startups recorded by its lanes (a lane's env is part of their key)", (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-lane-history-'));
    const db = openStore(join(dir, 'servelab.db'));
    t.after(() => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    });
    const server = { command: ['node', 'sim'], env: {}, unsetEnv: [], profile: 'simulator' } as unknown as ServerConfig;
    const lanes = [0, 1].map((index) => ({ name: `lane${index + 1}`, env: { LANE: String(index) } }));
    const experiment = { name: 'e', variants: [{ name: 'baseline', serverKey: 'A', server }], workloads: [], lanes } as unknown as ResolvedExperiment;
    // What the runner records: each lane's start under the lane's version of the config.
    for (const [index, lane] of lanes.entries())
      recordStartup(db, {
        configKey: startupKeyOf(laneServer(server, lane)),
        startedAt: new Date().toISOString(),
        outcome: 'ready',
        readyMs: 1000 * (index + 1),
        phases: [],
      });
    assert.deepEqual(loadCostModel(db, experiment).startups.A, { ms: 1500, source: 'history', samples: 2 });
  });
});
