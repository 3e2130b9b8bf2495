/**
 * The run lease in-process on a real SQLite store: fencing (a write of a runner whose lease was taken over fails in
 * its own transaction and names the new holder), loss and store faults seen by the heartbeat (never thrown from the
 * timer), and the takeover rules (dead pid, silent holder, live holder refused).
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import Database from 'better-sqlite3';
import { type Db, openStore } from '../src/store/db.js';
import { storeFault } from '../src/store/fault.js';
import { acquireRunLease } from '../src/store/lease.js';
import { ensureExperiment, insertRun } from '../src/store/runs.js';
import { UserError } from '../src/util/errors.js';
import { processIdentity } from '../src/util/proc-identity.js';
import { pollFor } from './support-wait.js';

// Heartbeat every 100 ms, stale after 600 ms (read when a lease is acquired).
process.env.SERVELAB_LEASE_STALE_MS = '600';

function storeWithRun(t: TestContext): { db: Db; path: string; runId: number } {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-lease-'));
  const path = join(dir, 'servelab.db');
  const db = openStore(path);
  t.after(() => {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const runId = insertRun(db, { experimentId: ensureExperiment(db, 'lease', '/x.yaml'), servelabVersion: 'test', config: {}, plan: {} });
  return { db, path, runId };
}

/** What a takeover by another runner does to the row. */
function takeOver(db: Db, runId: number, holder: { pid: number; host: string }): void {
  db.prepare('UPDATE run_leases SET pid = ?, host = ?, process_start = ?, acquired_at = ? WHERE run_id = ?').run(
    holder.pid,
    holder.host,
    'other',
    new Date().toISOString(),
    runId,
  );
}

/** A pid that belonged to a process that has exited (and been reaped). */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}

const noLog = (): void => {};

describe('run lease', () => {
  test('fenced writes run while the lease is ours; after a takeover they fail in the transaction, naming the new holder', async (t) => {
    const { db, runId } = storeWithRun(t);
    const lease = await acquireRunLease(db, runId, '*', { log: noLog });
    t.after(() => lease.release());
    const write = () => db.prepare('UPDATE runs SET message = ? WHERE id = ?').run('written', runId);
    lease.fenced(write);
    assert.equal((db.prepare('SELECT message FROM runs').get() as { message: string }).message, 'written');

    takeOver(db, runId, { pid: 4242, host: 'other-host' });
    db.prepare('UPDATE runs SET message = NULL').run();
    assert.throws(
      () => lease.fenced(write),
      (error: unknown) => error instanceof UserError && /run \d+ was taken over by pid 4242 on other-host/.test(error.message),
    );
    assert.equal((db.prepare('SELECT message FROM runs').get() as { message: string | null }).message, null, 'the fenced write did not happen');
    assert.equal(lease.signal.aborted, true);
    lease.release();
    assert.equal((db.prepare('SELECT pid FROM run_leases').get() as { pid: number }).pid, 4242, 'release leaves a lost lease to its new holder');
  });

  test('the heartbeat sees a takeover and aborts the signal with the new holder', async (t) => {
    const { db, runId } = storeWithRun(t);
    const lease = await acquireRunLease(db, runId, '*', { log: noLog });
    t.after(() => lease.release());
    takeOver(db, runId, { pid: 4343, host: 'elsewhere' });
    await pollFor('the heartbeat', () => (lease.signal.aborted ? true : undefined), 5_000);
    assert.match(String((lease.signal.reason as Error).message), /taken over by pid 4343 on elsewhere/);
  });

  test('a heartbeat on a locked store aborts the signal with the store error (no throw from the timer)', async (t) => {
    const { db, path, runId } = storeWithRun(t);
    db.pragma('busy_timeout = 50');
    const lease = await acquireRunLease(db, runId, '*', { log: noLog });
    t.after(() => lease.release());
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    t.after(() => {
      other.exec('ROLLBACK');
      other.close();
    });
    await pollFor('the heartbeat', () => (lease.signal.aborted ? true : undefined), 5_000);
    const fault = storeFault(lease.signal.reason);
    assert.ok(fault instanceof UserError, String(lease.signal.reason));
    assert.match(fault.message, /locked by another process .*\(SQLITE_BUSY\)/);
  });

  test('takeover: a live holder with a fresh heartbeat is refused; a dead pid or a silent holder is taken over, saying why', async (t) => {
    const { db, runId } = storeWithRun(t);
    const lease = await acquireRunLease(db, runId, '*', { log: noLog });
    lease.release();
    const lines: string[] = [];
    const log = (line: string): void => void lines.push(line);
    const holds = db.prepare(
      'INSERT OR REPLACE INTO run_leases (lease_key, run_id, host, pid, process_start, acquired_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    const now = new Date().toISOString();

    // Our parent: alive on this host, its real start time, heartbeating. Only its silence can make the lease stale.
    holds.run(String(runId), runId, hostname(), process.ppid, processIdentity(process.ppid)?.start ?? 'unknown', now, now);
    await assert.rejects(acquireRunLease(db, runId, '*', { log }), new RegExp(`run ${runId} is being run by pid ${process.ppid} on `));

    // The same holder, silent past the stale period (paused): taken over.
    db.prepare('UPDATE run_leases SET heartbeat_at = ?').run(new Date(Date.now() - 5_000).toISOString());
    const silent = await acquireRunLease(db, runId, '*', { log });
    silent.release();
    assert.match(lines.at(-1)!, new RegExp(`taking over the lease of pid ${process.ppid} on \\S+ \\(its runner has been silent for 5(\\.0)? s: paused`));

    // A dead pid on this host: taken over at once, heartbeat fresh or not.
    const dead = deadPid();
    holds.run(String(runId), runId, hostname(), dead, 'x', now, new Date().toISOString());
    const taken = await acquireRunLease(db, runId, '*', { log });
    taken.release();
    assert.match(lines.at(-1)!, new RegExp(`taking over the lease of pid ${dead} on \\S+ \\(its runner is gone\\)`));
  });
});
