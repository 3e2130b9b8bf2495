/**
 * Trial validity end to end on real processes: a server killed with SIGKILL mid-trial, requests failing beyond
 * maxFailedFraction, and two runners of the same run.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { processAlive } from '../src/util/proc-identity.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { startRunner, storeRow } from './support-runner.js';
import { pollFor, waitFor } from './support-wait.js';

/** Trials of ~2 s (6 requests × 40 tokens × 8 ms): long enough to kill a server in the middle of one. */
const slowTrials = {
  server: { command: simCommand({ tpotMs: 8 }), readyTimeout: '5m' },
  client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 40, seed: 3 }, warmupRequests: 1 },
  workloads: [{ kind: 'single-stream', requests: 6 }],
};

/** The pid of the first ready server once its trial has measured a request. */
function serverInFlight(db: Database.Database): Promise<number> {
  const sql = "SELECT s.pid FROM servers s JOIN progress p ON p.run_id = s.run_id WHERE s.status = 'ready' AND p.completed >= 1 ORDER BY s.id LIMIT 1";
  return pollFor('a trial in flight', () => storeRow<{ pid: number }>(db, sql)?.pid, 60_000);
}

describe('trial validity', { timeout: 240_000 }, () => {
  test('a server killed with SIGKILL mid-trial: seen within a second, trial invalid with its cause, server restarted, trial re-run', async (t) => {
    const dir = tempDir(t, 'validity-kill');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'kill.yaml', { name: 'kill9', trials: 2, ...slowTrials });
    const runner = await startRunner(t, [file], store);
    // The first server, once its first trial has measured a request.
    const pid = await serverInFlight(runner.db);
    const killedAt = Date.now();
    process.kill(pid, 'SIGKILL');

    const result = await runner.done;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /INVALID \(\d+ ok, \d+ failed\): server was killed by SIGKILL during the trial/);
    assert.match(result.stderr, /restarting it \(unplanned restart 1\)/);
    const invalid = runner.db.prepare('SELECT reason, finished_at FROM invalid_trials').all() as Array<{ reason: string; finished_at: string }>;
    assert.equal(invalid.length, 1);
    assert.equal(invalid[0]!.reason, 'server was killed by SIGKILL during the trial');
    // Detection within 1 s, plus slack for a loaded 2-core test machine.
    assert.ok(
      Date.parse(invalid[0]!.finished_at) - killedAt < 1_500,
      `invalid trial recorded ${Date.parse(invalid[0]!.finished_at) - killedAt} ms after the kill`,
    );
    const trials = runner.db.prepare('SELECT metrics_json FROM trials').all() as Array<{ metrics_json: string }>;
    assert.equal(trials.length, 2, 'both planned trials measured, the killed one again');
    assert.ok(
      trials.every((row) => (JSON.parse(row.metrics_json) as { failed: number }).failed === 0),
      'no failed request in a counted trial',
    );
    const servers = runner.db.prepare('SELECT status FROM servers ORDER BY id').all() as Array<{ status: string }>;
    assert.deepEqual(
      servers.map((row) => row.status),
      ['failed', 'stopped'],
    );
    assert.equal(processAlive(pid), false);

    // Every view shows it: `show` lists the invalid trial and its cause.
    const show = await cli(['show', '1'], { store });
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /invalid trials?: 1/i);
    assert.match(show.stdout, /server was killed by SIGKILL during the trial/);
  });

  test('a server that stops answering mid-trial (SIGSTOP): trial invalid after 3 s, re-run on the same server once it answers again', async (t) => {
    const dir = tempDir(t, 'validity-hang');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'hang.yaml', { name: 'hang', trials: 1, ...slowTrials });
    const runner = await startRunner(t, [file], store);
    const pid = await serverInFlight(runner.db);
    process.kill(pid, 'SIGSTOP');
    t.after(() => {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // gone
      }
    });
    await pollFor('the invalid trial', () => storeRow<{ reason: string }>(runner.db, 'SELECT reason FROM invalid_trials'), 30_000);
    process.kill(pid, 'SIGCONT');

    const result = await runner.done;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /INVALID .*server answered nothing for 3 s during the trial/);
    assert.match(result.stderr, /server is up and answering; measuring the trial again/);
    assert.equal((runner.db.prepare('SELECT COUNT(*) AS n FROM servers').get() as { n: number }).n, 1, 'no restart: the same server was measured again');
    assert.equal((runner.db.prepare('SELECT COUNT(*) AS n FROM trials').get() as { n: number }).n, 1);
  });

  test('requests failing beyond maxFailedFraction: re-run up to trialRetries, then the run fails with cause, log tail and resume hint', async (t) => {
    const dir = tempDir(t, 'validity-fail');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'faulty.yaml', {
      name: 'faulty',
      trials: 1,
      trialRetries: 1,
      server: { command: simCommand({ extra: ['--fault', 'http-500:0.5'] }), readyTimeout: '5m' },
      workloads: [{ kind: 'single-stream', requests: 12 }],
    });
    const result = await cli(['run', file], { store });
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /trial \d+\/\d+ baseline single-stream was invalid 2 times; last: stopped after \d+ of 12 requests failed, more than maxFailedFraction 0 allows \(first: http-5xx/,
    );
    assert.match(result.stderr, /last lines of .*\.log:\n {2}\| /);
    assert.match(result.stderr, new RegExp(`servelab run ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} --resume 1`));
    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    assert.equal((db.prepare('SELECT status FROM runs WHERE id = 1').get() as { status: string }).status, 'failed');
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM invalid_trials').get() as { n: number }).n, 2);
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM trials').get() as { n: number }).n, 0, 'no invalid trial is counted');

    // A tolerance in the file lets the same faults through (and the failed requests stay visible).
    const tolerant = writeExperiment(dir, 'tolerant.yaml', {
      name: 'tolerant',
      trials: 1,
      maxFailedFraction: 1,
      server: { command: simCommand({ extra: ['--fault', 'http-500:0.5'] }), readyTimeout: '5m' },
      workloads: [{ kind: 'single-stream', requests: 12 }],
    });
    const tolerated = await cli(['run', tolerant], { store });
    assert.equal(tolerated.code, 0, tolerated.stderr);
    assert.match(tolerated.stderr, /\(\d+ ok, [1-9]\d* failed\)/);
  });

  test('one runner per run: a concurrent --resume refuses naming the holder; a killed holder takes its server along and its lease is taken over', async (t) => {
    const dir = tempDir(t, 'validity-lease');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'lease.yaml', { name: 'lease', trials: 3, ...slowTrials });
    const first = await startRunner(t, [file], store);
    await pollFor('the lease', () => storeRow<{ pid: number }>(first.db, 'SELECT pid FROM run_leases WHERE run_id = 1'), 60_000);

    const second = await cli(['run', file, '--resume', '1'], { store });
    assert.equal(second.code, 1, second.stderr);
    assert.match(second.stderr, new RegExp(`run 1 is being run by pid ${first.child.pid} on \\S+ \\(last heartbeat `));

    // Kill the holder mid-trial: its lease is stale (dead pid); its server's watchdog stops the server at once.
    const serverPid = await pollFor('a ready server', () => storeRow<{ pid: number }>(first.db, "SELECT pid FROM servers WHERE status = 'ready'")?.pid, 60_000);
    first.child.kill('SIGKILL');
    await first.done;
    // The simulator honours SIGTERM: gone well within the watchdog's grace period (launch/watchdog.ts).
    assert.ok(await waitFor(() => !processAlive(serverPid), 10_000), 'the killed runner left its server running');
    const resumed = await cli(['run', file, '--resume', '1'], { store });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, new RegExp(`taking over the lease of pid ${first.child.pid} on \\S+ \\(its runner is gone\\)`));
    assert.equal((first.db.prepare('SELECT COUNT(*) AS n FROM trials').get() as { n: number }).n, 3);
    assert.equal((first.db.prepare('SELECT COUNT(*) AS n FROM run_leases').get() as { n: number }).n, 0, 'the lease is released at the end');
  });
});
