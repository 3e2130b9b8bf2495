/**
 * The runner's decisions over many permutations, on a fake machine (support-fake-executor.ts): race eliminations,
 * validity retries, drift confirmation, schedules. The runner, plan, journal, store and analysis code are the real ones; one
 * end-to-end test per concern (campaign-race, experiment-validity, experiment-drift) runs them on simulators.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { type RunOutcome, runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { type Db, openStore } from '../src/store/db.js';
import { messageOf } from '../src/util/errors.js';
import { tempDir, writeExperiment } from './support-experiment.js';
import { FakeExecutor, type FakeMachine } from './support-fake-executor.js';

interface Outcome {
  outcome?: RunOutcome;
  error?: string;
  log: string[];
  executor: FakeExecutor;
}

/** A store in a temp dir, with a helper that runs an experiment (overrides of the tiny default) on a fake machine. */
function lab(t: TestContext): {
  db: Db;
  run: (overrides: Record<string, unknown>, machine: FakeMachine, options?: { acceptDrift?: boolean }) => Promise<Outcome>;
} {
  const dir = tempDir(t, 'fake');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  let files = 0;
  return {
    db,
    async run(overrides, machine, options = {}) {
      const file = writeExperiment(dir, `exp-${++files}.yaml`, {
        server: { command: ['fake-server', '--port', '{port}'], readyTimeout: '5m' },
        telemetry: { enabled: false },
        ...overrides,
      });
      const executor = new FakeExecutor(machine);
      const log: string[] = [];
      try {
        const outcome = await runExperiment({ db, experiment: loadExperiment(file), executor, workDir: dir, log: (line) => log.push(line), ...options });
        return { outcome, log, executor };
      } catch (error) {
        return { error: messageOf(error), log, executor };
      } finally {
        // The runner stops every server it started, however the run ended.
        assert.equal(executor.running, 0, 'servers left running');
        await executor.close();
      }
    },
  };
}

const count = (db: Db, sql: string, ...params: unknown[]): number => (db.prepare(sql).get(...params) as { n: number }).n;

describe('race eliminations', () => {
  // Known best: t3 decodes at 3 ms/token, the baseline at 4, t5 at 5.
  const race = {
    name: 'race',
    trials: 8,
    stopping: 'race',
    schedule: 'blocked',
    server: { command: ['fake-server', '--port', '{port}', '--tpot-ms', '4'], readyTimeout: '5m' },
    workloads: [{ kind: 'single-stream', requests: 3 }],
    grid: [{ name: 't{t}', params: { t: [3, 5] }, args: ['--tpot-ms', '{t}'] }],
  };
  const byTpotArg: FakeMachine = (call) => ({ tpotMs: Number(call.arg('--tpot-ms')) });

  test('a clear winner: the others are eliminated with their reason and keep their trials; the race stops early', async (t) => {
    const { db, run } = lab(t);
    const { outcome, log, error } = await run(race, byTpotArg);
    assert.equal(outcome?.status, 'done', error);
    assert.ok(
      log.some((line) => /^race decided after block [123]: t3 is significantly better than every other config$/.test(line)),
      log.join('\n'),
    );
    const events = db.prepare("SELECT variant, reason FROM race_events WHERE kind = 'eliminated' ORDER BY variant").all() as Array<{
      variant: string;
      reason: string;
    }>;
    assert.deepEqual(
      events.map((event) => event.variant),
      ['baseline', 't5'],
    );
    for (const event of events) assert.match(event.reason, /−\d+\.\d% vs best t3 \(Holm-adjusted p 0\.\d+, n \d+\/\d+\)/);
    const counts = db.prepare('SELECT variant, COUNT(*) AS n FROM trials GROUP BY variant').all() as Array<{ variant: string; n: number }>;
    assert.ok(counts.reduce((sum, row) => sum + row.n, 0) < 24, JSON.stringify(counts));
    assert.ok(
      counts.every((row) => row.n >= 4),
      'eliminated configs keep their trials',
    );
  });

  test('only the clearly worse config is eliminated and not started again; two equal leaders run every planned trial', async (t) => {
    const { db, run } = lab(t);
    // t3 and the baseline are equally fast: neither can be eliminated, the race never decides.
    const { outcome, error, executor } = await run(race, (call) => ({ tpotMs: call.arg('--tpot-ms') === '5' ? 5 : 3 }));
    assert.equal(outcome?.status, 'done', error);
    // A blocked race decides from its second pass on: t5 runs no trial and starts no server after the pass that eliminated it.
    const { after_pass: afterPass } = db.prepare("SELECT after_pass FROM race_events WHERE variant = 't5'").get() as { after_pass: number };
    assert.equal(executor.launches.filter((spec) => spec.command.at(-1) === '5').length, afterPass + 1);
    assert.equal(count(db, "SELECT COUNT(*) AS n FROM trials WHERE variant = 't5' AND block > ?", afterPass), 0);
    assert.ok(count(db, "SELECT COUNT(*) AS n FROM trials WHERE variant = 't5'") < 8);
    const eliminated = db.prepare("SELECT variant FROM race_events WHERE kind = 'eliminated'").all() as Array<{ variant: string }>;
    assert.deepEqual(
      eliminated.map((event) => event.variant),
      ['t5'],
    );
    assert.equal(count(db, "SELECT COUNT(*) AS n FROM race_events WHERE kind = 'stop'"), 0);
    assert.equal(count(db, "SELECT COUNT(*) AS n FROM trials WHERE variant IN ('baseline', 't3')"), 16);
  });

  test('configs that do not differ are never eliminated: the full grid is measured', async (t) => {
    const { db, run } = lab(t);
    const { outcome, error } = await run(race, () => ({ tpotMs: 4 }));
    assert.equal(outcome?.status, 'done', error);
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM race_events'), 0);
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM trials'), 24);
  });
});

describe('validity retries', () => {
  const tiny = { name: 'validity', trials: 3 };

  test('an invalid trial is measured again in place; the invalid attempt is kept with its cause, apart from the measured ones', async (t) => {
    const { db, run } = lab(t);
    // The second load (trial 2, attempt 0) fails every request.
    const { outcome, error, executor } = await run(tiny, (call) => ({ tpotMs: 4, ...(call.bench === 1 && { failed: 3 }) }));
    assert.equal(outcome?.status, 'done', error);
    assert.equal(executor.benches, 4);
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM trials'), 3);
    const invalid = db.prepare('SELECT repetition, attempt, failed, reason FROM invalid_trials').all();
    assert.deepEqual(invalid, [{ repetition: 1, attempt: 0, failed: 3, reason: 'all 3 requests failed' }]);
    // The server answered: it was kept, not restarted.
    assert.equal(executor.launches.length, 1);
  });

  test('invalid trialRetries + 1 times: the run fails naming the trial, its last cause and how to resume', async (t) => {
    for (const trialRetries of [0, 2]) {
      const { db, run } = lab(t);
      const { outcome, error, executor } = await run({ ...tiny, trialRetries }, (call) => ({ tpotMs: 4, ...(call.bench >= 1 && { failed: 1 }) }));
      assert.equal(outcome, undefined);
      assert.match(
        error ?? '',
        new RegExp(`^trial \\d+/\\d+ baseline single-stream was invalid ${trialRetries + 1} times; last: 1 of 3 requests failed \\(http-5xx 1\\)`),
      );
      assert.equal(executor.benches, 1 + trialRetries + 1);
      assert.equal(count(db, 'SELECT COUNT(*) AS n FROM invalid_trials'), trialRetries + 1);
      assert.equal(count(db, 'SELECT COUNT(*) AS n FROM trials'), 1);
      assert.equal((db.prepare('SELECT status FROM runs').get() as { status: string }).status, 'failed');
    }
  });

  test('failures within maxFailedFraction leave the trial valid', async (t) => {
    const { db, run } = lab(t);
    const { outcome, error, executor } = await run({ ...tiny, maxFailedFraction: 0.34 }, () => ({ tpotMs: 4, failed: 1 }));
    assert.equal(outcome?.status, 'done', error);
    assert.equal(executor.benches, 3);
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM invalid_trials'), 0);
  });

  test('a server that dies mid-trial: the trial is invalid with the death as cause, the server restarted (unplanned), the trial re-run', async (t) => {
    const { db, run } = lab(t);
    const { outcome, error, executor, log } = await run(tiny, (call) => ({ tpotMs: 4, ...(call.bench === 1 && { dies: true }) }));
    assert.equal(outcome?.status, 'done', error);
    assert.equal(executor.launches.length, 2);
    assert.ok(
      log.some((line) => /restarting it \(unplanned restart 1\)/.test(line)),
      log.join('\n'),
    );
    assert.deepEqual(db.prepare('SELECT reason FROM invalid_trials').all(), [{ reason: 'server was killed by SIGKILL during the trial' }]);
    assert.deepEqual(db.prepare('SELECT status, unplanned FROM servers ORDER BY id').all(), [
      { status: 'failed', unplanned: 0 },
      { status: 'stopped', unplanned: 1 },
    ]);
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM trials'), 3);
  });
});

describe('drift confirmation', () => {
  const drift = { name: 'drift', metric: 'tpotMedianMs', workloads: [{ kind: 'single-stream', requests: 4 }] };

  /** A finished run of 8 trials at 6 ms/token: the history the next runs are judged against. */
  async function withHistory(t: TestContext) {
    const store = lab(t);
    const first = await store.run({ ...drift, trials: 8 }, () => ({ tpotMs: 6 }));
    assert.equal(first.outcome?.status, 'done', first.error);
    return store;
  }

  test('a slowdown confirmed by the second trial raises the alarm and stops the run there', async (t) => {
    const { db, run } = await withHistory(t);
    const { outcome, log } = await run({ ...drift, trials: 4 }, () => ({ tpotMs: 12 }));
    assert.equal(outcome?.status, 'drift');
    assert.match(outcome?.message ?? '', /^drift alarm \(single-stream, noise band ±\d+%\): baseline .*environment identical/);
    assert.ok(
      log.some((line) => /confirming with its next trial/.test(line)),
      log.join('\n'),
    );
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM trials WHERE run_id = 2'), 2);
    assert.deepEqual(db.prepare('SELECT variant, accepted FROM drift_alarms').all(), [{ variant: 'baseline', accepted: 0 }]);
  });

  test('a single slow trial that the next one does not confirm raises no alarm', async (t) => {
    const { db, run } = await withHistory(t);
    const { outcome, log } = await run({ ...drift, trials: 4 }, (call) => ({ tpotMs: call.bench === 0 ? 12 : 6 }));
    assert.equal(outcome?.status, 'done');
    assert.ok(
      log.some((line) => /deviation not confirmed by its second trial/.test(line)),
      log.join('\n'),
    );
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM drift_alarms'), 0);
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM trials WHERE run_id = 2'), 4);
  });

  test('a change within the noise band is no suspicion at all', async (t) => {
    const { db, run } = await withHistory(t);
    const { outcome, log } = await run({ ...drift, trials: 4 }, () => ({ tpotMs: 6.1 }));
    assert.equal(outcome?.status, 'done');
    assert.ok(!log.some((line) => /confirming|not confirmed/.test(line)), log.join('\n'));
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM drift_alarms'), 0);
  });

  test('a pair with one planned trial cannot be confirmed: its first slow trial raises the alarm', async (t) => {
    const { db, run } = await withHistory(t);
    const { outcome } = await run({ ...drift, trials: 1 }, () => ({ tpotMs: 12 }));
    assert.equal(outcome?.status, 'drift');
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM drift_alarms'), 1);
  });

  test('accepted drift is recorded and the run measured to its end', async (t) => {
    const { db, run } = await withHistory(t);
    const { outcome, log } = await run({ ...drift, trials: 4 }, () => ({ tpotMs: 12 }), { acceptDrift: true });
    assert.equal(outcome?.status, 'done');
    assert.ok(log.includes('continuing (--accept-drift)'), log.join('\n'));
    assert.deepEqual(db.prepare('SELECT accepted FROM drift_alarms').all(), [{ accepted: 1 }]);
    assert.equal(count(db, 'SELECT COUNT(*) AS n FROM trials WHERE run_id = 2'), 4);
  });
});

describe('schedules', () => {
  const variants = { baseline: {}, k2: { args: ['--spec-draft-tokens', '2'] }, k4: { args: ['--spec-draft-tokens', '4'] } };

  for (const [schedule, restarts] of [
    ['blocked', 2 * 2],
    ['interleaved', 3 * 2],
  ] as const) {
    test(`${schedule}: the planned restarts are the executed ones`, async (t) => {
      const { db, run } = lab(t);
      const { outcome, error, executor } = await run({ name: `plan-${schedule}`, trials: 3, schedule, variants }, () => ({ tpotMs: 4 }));
      assert.equal(outcome?.status, 'done', error);
      const stored = JSON.parse((db.prepare('SELECT plan_json FROM runs').get() as { plan_json: string }).plan_json) as { restarts: number };
      assert.equal(stored.restarts, restarts);
      assert.equal(executor.launches.length - 1, restarts);
      assert.equal(count(db, 'SELECT COUNT(*) AS n FROM servers') - 1, restarts);
    });
  }
});
