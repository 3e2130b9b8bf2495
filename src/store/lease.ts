import { hostname } from 'node:os';
import { UserError } from '../util/errors.js';
import { processAlive, processIdentity } from '../util/proc-identity.js';
import type { Db } from './db.js';

/** A runner refreshes its lease this often... */
const HEARTBEAT_MS = 5_000;
/** ...and one not refreshed for this long belongs to a runner that is gone (or on a host that is unreachable). */
export const LEASE_STALE_MS = 30_000;

export interface LeaseHolder {
  host: string;
  pid: number;
  /** Process start time: tells the runner apart from a later process that reuses its pid. */
  processStart: string;
}

interface LeaseRow {
  host: string;
  pid: number;
  process_start: string;
  heartbeat_at: string;
}

export function currentRunner(): LeaseHolder {
  // Without /proc, the start time derived from the uptime still tells this process's own leases apart.
  const start = processIdentity(process.pid)?.start ?? new Date(Date.now() - process.uptime() * 1000).toISOString();
  return { host: hostname(), pid: process.pid, processStart: start };
}

/** A lease whose runner is provably gone (this host, dead or reused pid) or whose heartbeat stopped. */
function isStale(row: LeaseRow, nowMs: number): boolean {
  if (nowMs - Date.parse(row.heartbeat_at) > LEASE_STALE_MS) return true;
  if (row.host !== hostname()) return false;
  if (!processAlive(row.pid)) return true;
  const identity = processIdentity(row.pid);
  return identity !== undefined && identity.start !== row.process_start;
}

export interface Lease {
  /** Stop the heartbeat and give the run free. */
  release(): void;
}

/** Another live runner holds the lease. */
class LeaseHeld extends UserError {}

/**
 * Take the run for this process, atomically (one IMMEDIATE transaction: two runners racing on the same store file
 * cannot both win). `scope` is the part of the run: '*' for a whole run, a server key for one Slurm job's share.
 * Takes over a stale lease. When another live runner has it: waits up to `waitMs` for its lease to go stale (a
 * resubmitted Slurm job whose predecessor was killed a moment ago), then throws a UserError naming the holder.
 */
export async function acquireRunLease(db: Db, runId: number, scope: string, options: { log: (line: string) => void; waitMs?: number }): Promise<Lease> {
  const me = currentRunner();
  const key = scope === '*' ? `${runId}` : `${runId}:${scope}`;
  const deadline = Date.now() + (options.waitMs ?? 0);
  for (;;) {
    try {
      takeLease(db, runId, key, me, options.log);
      break;
    } catch (error) {
      if (!(error instanceof LeaseHeld) || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 2_000));
    }
  }
  const owned = 'lease_key = ? AND host = ? AND pid = ? AND process_start = ?';
  const timer = setInterval(() => {
    db.prepare(`UPDATE run_leases SET heartbeat_at = ? WHERE ${owned}`).run(new Date().toISOString(), key, me.host, me.pid, me.processStart);
  }, HEARTBEAT_MS);
  timer.unref();
  return {
    release() {
      clearInterval(timer);
      db.prepare(`DELETE FROM run_leases WHERE ${owned}`).run(key, me.host, me.pid, me.processStart);
    },
  };
}

function takeLease(db: Db, runId: number, key: string, me: LeaseHolder, log: (line: string) => void): void {
  db.transaction(() => {
    const row = db.prepare('SELECT host, pid, process_start, heartbeat_at FROM run_leases WHERE lease_key = ?').get(key) as LeaseRow | undefined;
    const mine = row !== undefined && row.host === me.host && row.pid === me.pid && row.process_start === me.processStart;
    if (row && !mine) {
      if (!isStale(row, Date.now())) {
        throw new LeaseHeld(
          `run ${runId} is being run by pid ${row.pid} on ${row.host} (last heartbeat ${row.heartbeat_at})`,
          'wait for it to finish, or stop that runner, then resume',
        );
      }
      log(`run ${runId}: taking over the lease of pid ${row.pid} on ${row.host} (its runner is gone)`);
    }
    const at = new Date().toISOString();
    db.prepare(
      `INSERT INTO run_leases (lease_key, run_id, host, pid, process_start, acquired_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (lease_key) DO UPDATE SET host = excluded.host, pid = excluded.pid, process_start = excluded.process_start,
         acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at`,
    ).run(key, runId, me.host, me.pid, me.processStart, at, at);
  }).immediate();
}
