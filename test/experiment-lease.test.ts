/**
 * Lease fencing and heartbeat faults on a real `servelab run` against the simulator: a runner paused (SIGSTOP) past
 * the stale period is taken over by a resume and, once continued, stops at once naming the new holder, with every
 * trial stored exactly once; a heartbeat the store refuses ends the run with one clean line, its server stopped.
 * SERVELAB_LEASE_STALE_MS shortens the lease to 1.5 s (heartbeat every 250 ms) so this takes seconds.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { processAlive } from '../src/util/proc-identity.js';
import { SERVELAB, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { startRunner, storeRow } from './support-runner.js';
import { pollFor } from './support-wait.js';

const STALE_MS = 1_500;
const LEASE_ENV = { SERVELAB_LEASE_STALE_MS: String(STALE_MS) };

/** Once a trial has measured a request. */
function trialInFlight(db: Database.Database): Promise<number> {
  const sql = "SELECT s.pid FROM servers s JOIN progress p ON p.run_id = s.run_id WHERE s.status = 'ready' AND p.completed >= 1 ORDER BY s.id LIMIT 1";
  return pollFor('a trial in flight', () => storeRow<{ pid: number }>(db, sql)?.pid, 60_000);
}

/** SIGSTOP `pid` at a moment it holds no write transaction on `store` (else every other writer would wait on it). */
async function pauseOutsideWrites(pid: number, store: string): Promise<void> {
  const probe = new Database(store);
  try {
    probe.pragma('busy_timeout = 0');
    for (let attempt = 0; attempt < 100; attempt += 1) {
      process.kill(pid, 'SIGSTOP');
      try {
        probe.exec('BEGIN IMMEDIATE; ROLLBACK');
        return;
      } catch {
        process.kill(pid, 'SIGCONT');
        await delay(20);
      }
    }
    throw new Error('the runner never paused outside a write');
  } finally {
    probe.close();
  }
}

/** Trials of ~2 s (6 requests × 40 tokens × 8 ms). */
const slowTrials = {
  server: { command: simCommand({ tpotMs: 8 }), readyTimeout: '5m' },
  client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 40, seed: 3 }, warmupRequests: 1 },
  workloads: [{ kind: 'single-stream', requests: 6 }],
};

const NO_STACK = /^\s+at /m;

describe('lease fencing', { timeout: 180_000 }, () => {
  test('a runner paused past its lease is taken over by a resume; continued, it stops naming the new holder; no trial lost or doubled', async (t) => {
    const dir = tempDir(t, 'lease-pause');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'pause.yaml', { name: 'pause', trials: 3, ...slowTrials });
    const first = await startRunner(t, [file], store, LEASE_ENV);
    const firstServer = await trialInFlight(first.db);
    await pauseOutsideWrites(first.child.pid!, store);
    // Wait out the stale period: only then may a resume take the run.
    await pollFor(
      'a stale lease',
      () => {
        const lease = storeRow<{ heartbeat_at: string }>(first.db, 'SELECT heartbeat_at FROM run_leases WHERE run_id = 1');
        return lease && Date.now() - Date.parse(lease.heartbeat_at) > STALE_MS + 200 ? true : undefined;
      },
      30_000,
    );

    const second = await startRunner(t, ['--resume', '1'], store, LEASE_ENV);
    await pollFor(
      'the takeover',
      () => (storeRow<{ pid: number }>(first.db, 'SELECT pid FROM run_leases WHERE run_id = 1')?.pid === second.child.pid ? true : undefined),
      30_000,
    );
    first.child.kill('SIGCONT');

    const paused = await first.done;
    assert.equal(paused.code, 1, paused.stderr);
    assert.match(paused.stderr, new RegExp(`servelab: run 1 was taken over by pid ${second.child.pid} on \\S+ \\(at [^)]+\\) while this runner was silent`));
    assert.doesNotMatch(paused.stderr, NO_STACK);
    const resumed = await second.done;
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, new RegExp(`taking over the lease of pid ${first.child.pid} on \\S+ \\(its runner has been silent for [\\d.]+ s: paused`));

    const trials = first.db.prepare('SELECT variant, workload, block, repetition FROM trials').all();
    assert.equal(trials.length, 3, 'every planned trial stored');
    assert.equal(new Set(trials.map((trial) => JSON.stringify(trial))).size, 3, 'none stored twice');
    assert.equal((first.db.prepare('SELECT status FROM runs WHERE id = 1').get() as { status: string }).status, 'done');
    const firstServers = first.db.prepare('SELECT pid FROM servers WHERE runner_pid = ?').all(first.child.pid) as Array<{ pid: number }>;
    assert.ok(firstServers.some((server) => server.pid === firstServer));
    for (const server of firstServers) assert.equal(processAlive(server.pid), false, `server ${server.pid} of the paused runner stopped`);
  });

  test('a heartbeat the store refuses: one clean line, the server stopped, the run marked failed', async (t) => {
    const dir = tempDir(t, 'lease-fault');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'fault.yaml', { name: 'heartbeat-fault', trials: 2, ...slowTrials });
    const runner = await startRunner(t, [file], store, LEASE_ENV);
    const server = await trialInFlight(runner.db);
    // Injected fault: every heartbeat (the only UPDATE of run_leases) fails from now on; all other writes work.
    const writer = new Database(store);
    writer.exec("CREATE TRIGGER refuse_heartbeat BEFORE UPDATE ON run_leases BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END");
    writer.close();

    const result = await runner.done;
    assert.equal(result.code, 1, result.stderr);
    const failures = result.stderr.split('\n').filter((line) => line.startsWith('servelab: '));
    assert.equal(failures.length, 1, result.stderr);
    assert.match(failures[0]!, new RegExp(`servelab: store ${store.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: disk I/O error \\(SQLITE_CONSTRAINT_TRIGGER\\)`));
    assert.match(result.stderr, /next: .*servelab run --resume 1/);
    assert.doesNotMatch(result.stderr, NO_STACK);
    assert.equal(processAlive(server), false, 'the server was stopped');
    assert.equal((runner.db.prepare('SELECT status FROM runs WHERE id = 1').get() as { status: string }).status, 'failed');
    assert.deepEqual(
      (runner.db.prepare('SELECT status FROM servers').all() as Array<{ status: string }>).map((server) => server.status),
      ['stopped'],
    );
  });

  // Issue 33: runs killed with kill -9 showed `running` in `ls` for ever. Whatever the instant (the run row just
  // written, its server starting, a trial in flight), once the lease is stale every view says `interrupted`.
  test('a runner killed with SIGKILL at any point: once its lease is stale, ls says interrupted with how to resume', async (t) => {
    const dir = tempDir(t, 'lease-kill');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'kill.yaml', { name: 'kill', trials: 2, ...slowTrials });
    const instants: Array<[string, (db: Database.Database, runId: number) => Promise<unknown>]> = [
      ['its run row written', (db, runId) => pollFor('the run row', () => storeRow(db, 'SELECT id FROM runs WHERE id = ?', runId), 30_000)],
      ['its server starting', (db, runId) => pollFor('a server row', () => storeRow(db, 'SELECT id FROM servers WHERE run_id = ?', runId), 30_000)],
      ['a trial in flight', (db) => trialInFlight(db)],
    ];
    for (const [index, [instant, reached]] of instants.entries()) {
      const runId = index + 1;
      const runner = await startRunner(t, [file], store, LEASE_ENV);
      await reached(runner.db, runId);
      runner.child.kill('SIGKILL');
      await runner.done;
      await delay(STALE_MS + 200);
      // `ls` judges staleness with the same short lease as the runner had.
      const listed = execFileSync(process.execPath, [SERVELAB, 'ls', '--json'], {
        env: { ...process.env, SERVELAB_STORE: store, SERVELAB_LEASE_STALE_MS: String(STALE_MS) },
        encoding: 'utf8',
      });
      const runs = JSON.parse(listed) as Array<{ id: number; status: string; message?: string }>;
      const run = runs.find((candidate) => candidate.id === runId);
      assert.equal(run?.status, 'interrupted', `killed with ${instant}: ${JSON.stringify(run)}`);
      assert.match(run.message ?? '', new RegExp(`resume: \`servelab run --resume ${runId}\``));
      assert.deepEqual(
        runs.filter((candidate) => candidate.status === 'running'),
        [],
      );
    }
  });
});
