import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { blockedPlan, passSizes } from '../src/experiment/plan/schedule.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

describe('blocked schedule', () => {
  const input = {
    variants: [
      { name: 'a', serverKey: 'A' },
      { name: 'b', serverKey: 'B' },
      { name: 'c', serverKey: 'C' },
      { name: 'a-client', serverKey: 'A' },
    ],
    workloads: ['single-stream', 'c=8'],
    repetitions: 5,
    seed: 7,
  };

  test('each config starts once per pass, the order reverses every pass, and every pair gets all repetitions', () => {
    const plan = blockedPlan({ ...input, passes: 2 });
    assert.deepEqual(passSizes(5, 2), [3, 2]);
    assert.equal(plan.schedule, 'blocked');
    assert.equal(plan.blocks, 2);
    assert.equal(plan.restarts, 2 * (3 - 1));
    const order = (pass: number): string[] => [...new Set(plan.trials.filter((trial) => trial.block === pass).map((trial) => trial.serverKey))];
    assert.deepEqual(order(1), [...order(0)].reverse());
    for (const variant of input.variants) {
      for (const workload of input.workloads) {
        const reps = plan.trials.filter((trial) => trial.variant === variant.name && trial.workload === workload).map((trial) => trial.repetition);
        assert.deepEqual(reps, [0, 1, 2, 3, 4]);
      }
    }
  });

  test('more passes than repetitions is clipped; the plan is deterministic in its seed', () => {
    assert.equal(blockedPlan({ ...input, passes: 9 }).blocks, 5);
    assert.deepEqual(blockedPlan({ ...input, passes: 2 }), blockedPlan({ ...input, passes: 2 }));
  });
});

describe('plan and budget on simulator servers', () => {
  const variants = {
    baseline: {},
    k2: { args: ['--spec-draft-tokens', '2', '--spec-acceptance', '0.7'] },
    k4: { args: ['--spec-draft-tokens', '4', '--spec-acceptance', '0.7'] },
  };

  // One schedule end to end; both, with their restart counts, on the fake machine (experiment-permutations.test.ts).
  test('interleaved: the predicted restarts equal the executed ones', async (t) => {
    const dir = tempDir(t, 'plan-interleaved');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'e.yaml', { name: 'plan-interleaved', trials: 3, schedule: 'interleaved', variants });
    const planned = await cli(['plan', file, '--json'], { store });
    assert.equal(planned.code, 0, planned.stderr);
    const choice = JSON.parse(planned.stdout) as { schedule: string; plan: { restarts: number; trials: unknown[] } };
    assert.equal(choice.schedule, 'interleaved');
    assert.equal(choice.plan.restarts, 3 * 2);

    const run = await cli(['run', file], { store, timeoutMs: 120_000 });
    assert.equal(run.code, 0, run.stderr);
    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const servers = (db.prepare('SELECT COUNT(*) AS n FROM servers').get() as { n: number }).n;
    assert.equal(servers - 1, choice.plan.restarts);
    const stored = JSON.parse((db.prepare('SELECT plan_json FROM runs').get() as { plan_json: string }).plan_json) as { restarts: number };
    assert.equal(stored.restarts, choice.plan.restarts);

    // With history in the store, the next plan is costed from it instead of the defaults.
    const again = await cli(['plan', file], { store });
    assert.match(again.stdout, /median of \d+ startups/);
    assert.match(again.stdout, /from the store's history/);
  });

  test('a plan over budget is refused before anything starts; --dry-run prints the plan and runs nothing', async (t) => {
    const dir = tempDir(t, 'plan-budget');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'e.yaml', { name: 'plan-budget', variants, budget: { wallTime: '10m', gpusPerServer: 4 }, maxRestarts: 3 });
    const dry = await cli(['run', file, '--dry-run'], { store });
    assert.equal(dry.code, 0, dry.stderr);
    // No history: the simulator's own flags cost the plan (seconds), so only the restart limit is broken.
    assert.match(dry.stdout, /\(the simulator's flags, no history\)/);
    assert.match(dry.stdout, /^budget: OVER maxRestarts 3 \(8 planned\)$/m);
    const refused = await cli(['run', file], { store });
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /the plan exceeds maxRestarts 3 \(8 planned\)/);
    assert.match(refused.stderr, /--force/);
    assert.doesNotMatch(refused.stderr, /at .*\.js:\d+/);
    const db = existsSync(store) ? new Database(store, { readonly: true }) : undefined;
    t.after(() => db?.close());
    assert.equal(db ? (db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n : 0, 0);
  });

  test('auto picks blocked when a start costs more than a trial, and says why', async (t) => {
    const dir = tempDir(t, 'plan-auto');
    const store = join(dir, 'servelab.db');
    // No history: the simulator's declared 3-s load against its sub-second trials.
    const file = writeExperiment(dir, 'e.yaml', {
      name: 'plan-auto',
      schedule: 'auto',
      variants,
      server: { command: simCommand({ loadMs: 3000 }), readyTimeout: '5m' },
    });
    const planned = await cli(['plan', file], { store });
    assert.equal(planned.code, 0, planned.stderr);
    assert.match(planned.stdout, /schedule: blocked, 2 blocks, 3 server configs, 4 restarts — auto: a start costs [\d.]+× a trial \(≥ 1\)/);
    assert.match(planned.stdout, /interleaved {2}4 +8 /);
  });
});
