import { hostname } from 'node:os';
import { UserError } from '../util/errors.js';
import { formatDuration } from '../util/format.js';
import { processAlive, processIdentity } from '../util/proc-identity.js';
import type { Db } from './db.js';

/** A runner refreshes its lease every sixth of this, and one not refreshed for this long has stopped (or is paused). */
const DEFAULT_LEASE_STALE_MS = 30_000;

/**
 * How long a silent lease holder keeps its run: $SERVELAB_LEASE_STALE_MS, else 30 s. Tests set a short one so a
 * paused runner can be taken over within seconds; the heartbeat runs at a sixth of it.
 */
export function leaseStaleMs(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env.SERVELAB_LEASE_STALE_MS);
  return Number.isFinite(value) && value >= 600 ? value : DEFAULT_LEASE_STALE_MS;
}

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
  acquired_at: string;
  heartbeat_at: string;
}

export function currentRunner(): LeaseHolder {
  // Without /proc, the start time derived from the uptime still tells this process's own leases apart.
  const start = processIdentity(process.pid)?.start ?? new Date(Date.now() - process.uptime() * 1000).toISOString();
  return { host: hostname(), pid: process.pid, processStart: start };
}

/**
 * Why a lease may be taken over, or undefined while its holder may still be running. On this host a holder whose pid
 * is gone (or reused) is dead. Anywhere, one silent for longer than the stale period is taken over too: it may only
 * be paused (SIGSTOP, a suspended VM), so fencing makes its next write fail (see Lease.fenced).
 */
function takeoverReason(row: LeaseRow, nowMs: number, staleMs: number): string | undefined {
  if (row.host === hostname()) {
    if (!processAlive(row.pid)) return 'its runner is gone';
    const identity = processIdentity(row.pid);
    if (identity !== undefined && identity.start !== row.process_start) return 'its runner is gone (pid reused)';
  }
  const silentMs = nowMs - Date.parse(row.heartbeat_at);
  if (silentMs <= staleMs) return undefined;
  return `its runner has been silent for ${formatDuration(silentMs)}: paused or unreachable; it stops at its next heartbeat or store write`;
}

export interface Lease {
  /**
   * Aborts when the run is no longer this runner's to write: another runner took the lease over (reason: a UserError
   * naming it), or the heartbeat could not write (reason: the store's error, for storeFault like any other write).
   */
  readonly signal: AbortSignal;
  /**
   * Run `write` in one IMMEDIATE transaction that first checks the lease is still this runner's (its token: holder
   * and acquisition time). Throws the lease-lost UserError (and aborts `signal`) when it is not: a runner that was
   * paused while another took over can never store a trial the new holder also stores.
   */
  fenced<T>(write: () => T): T;
  /** Stop the heartbeat and give the run free (a lost lease is left to its new holder). */
  release(): void;
}

/** Another live runner holds the lease. */
class LeaseHeld extends UserError {}

/**
 * Take the run for this process, atomically (one IMMEDIATE transaction: two runners racing on the same store file
 * cannot both win). `scope` is the part of the run: '*' for a whole run, a server key for one Slurm job's share.
 * Takes over a lease whose holder is dead or silent (takeoverReason). When another live runner has it: waits up to
 * `waitMs` for its lease to go stale (a resubmitted Slurm job whose predecessor was killed a moment ago), then throws
 * a UserError naming the holder.
 */
export async function acquireRunLease(db: Db, runId: number, scope: string, options: { log: (line: string) => void; waitMs?: number }): Promise<Lease> {
  const staleMs = leaseStaleMs();
  const key = leaseKey(runId, scope);
  const deadline = Date.now() + (options.waitMs ?? 0);
  let token: Token;
  for (;;) {
    try {
      token = takeLease(db, runId, key, staleMs, options.log);
      break;
    } catch (error) {
      if (!(error instanceof LeaseHeld) || Date.now() >= deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, staleMs / 3)));
    }
  }
  return heldLease(db, runId, key, token, staleMs);
}

/**
 * A new run and its lease, written in one transaction by `create` (which inserts the run row and returns its id):
 * no instant exists at which the run's row says `running` without a lease, so a runner killed at any point leaves
 * either no run or one whose lease goes stale (views then say `interrupted`, see store/reads.ts `viewedRuns`).
 */
export function leaseNewRun(db: Db, create: () => number, options: { log: (line: string) => void }): { runId: number; lease: Lease } {
  const staleMs = leaseStaleMs();
  let token: Token | undefined;
  const runId = db
    .transaction(() => {
      const id = create();
      token = takeLease(db, id, leaseKey(id, '*'), staleMs, options.log);
      return id;
    })
    .immediate();
  return { runId, lease: heldLease(db, runId, leaseKey(runId, '*'), token!, staleMs) };
}

/**
 * The scopes of a run's leases whose holders may still be running (none dead or silent past the stale period), for
 * parts of one run held by separate processes (Slurm lanes: `lane:N`).
 */
export function liveLeaseScopes(db: Db, runId: number): Set<string> {
  const staleMs = leaseStaleMs();
  const rows = db.prepare('SELECT lease_key, host, pid, process_start, acquired_at, heartbeat_at FROM run_leases WHERE run_id = ?').all(runId) as Array<
    LeaseRow & { lease_key: string }
  >;
  const prefix = `${runId}:`;
  return new Set(
    rows
      .filter((row) => row.lease_key.startsWith(prefix) && takeoverReason(row, Date.now(), staleMs) === undefined)
      .map((row) => row.lease_key.slice(prefix.length)),
  );
}

/**
 * Take a part of the run away from its holder, known dead (its Slurm job ended) or silent: the holder's next heartbeat
 * or fenced write then fails, so a holder that was only paused stores nothing another process measures meanwhile.
 */
export function revokeLease(db: Db, runId: number, scope: string): void {
  db.prepare('DELETE FROM run_leases WHERE lease_key = ?').run(leaseKey(runId, scope));
}

function leaseKey(runId: number, scope: string): string {
  return scope === '*' ? `${runId}` : `${runId}:${scope}`;
}

/** What makes a lease this acquisition's: the holder and the moment it took the lease. */
interface Token extends LeaseHolder {
  acquiredAt: string;
}

const OWNED = 'lease_key = ? AND host = ? AND pid = ? AND process_start = ? AND acquired_at = ?';

function heldLease(db: Db, runId: number, key: string, token: Token, staleMs: number): Lease {
  const owned = [key, token.host, token.pid, token.processStart, token.acquiredAt] as const;
  const controller = new AbortController();
  const lost = (): UserError => {
    let row: LeaseRow | undefined;
    try {
      row = readLease(db, key);
    } catch {
      // The store fails as well: the lease is lost all the same.
    }
    return leaseLost(runId, row, staleMs);
  };
  const fail = <E>(error: E): E => {
    clearInterval(timer);
    if (!controller.signal.aborted) controller.abort(error);
    return error;
  };
  const heartbeat = db.prepare(`UPDATE run_leases SET heartbeat_at = ? WHERE ${OWNED}`);
  // Errors are caught here: a throw from a timer would end the process with a raw stack and leave servers running.
  const timer = setInterval(
    () => {
      try {
        if (heartbeat.run(new Date().toISOString(), ...owned).changes === 0) fail(lost());
      } catch (error) {
        fail(error);
      }
    },
    Math.max(100, Math.round(staleMs / 6)),
  );
  timer.unref();
  const check = db.prepare(`SELECT 1 FROM run_leases WHERE ${OWNED}`);
  return {
    signal: controller.signal,
    fenced: (write) =>
      db
        .transaction(() => {
          if (check.get(...owned) === undefined) throw fail(lost());
          return write();
        })
        .immediate(),
    release() {
      clearInterval(timer);
      try {
        db.prepare(`DELETE FROM run_leases WHERE ${OWNED}`).run(...owned);
      } catch {
        // A store that fails now (locked, full) was reported already; the lease goes stale on its own.
      }
    },
  };
}

function readLease(db: Db, key: string): LeaseRow | undefined {
  return db.prepare('SELECT host, pid, process_start, acquired_at, heartbeat_at FROM run_leases WHERE lease_key = ?').get(key) as LeaseRow | undefined;
}

function leaseLost(runId: number, row: LeaseRow | undefined, staleMs: number): UserError {
  const who = row ? `pid ${row.pid} on ${row.host} (at ${row.acquired_at})` : 'another runner (which has released it since)';
  return new UserError(
    `run ${runId} was taken over by ${who} while this runner was silent for more than ${formatDuration(staleMs)}; this runner stopped`,
    `let that runner finish the run (\`servelab show ${runId}\`); the trials this runner stored are kept`,
  );
}

function takeLease(db: Db, runId: number, key: string, staleMs: number, log: (line: string) => void): Token {
  const me = currentRunner();
  return db
    .transaction((): Token => {
      const row = readLease(db, key);
      const mine = row !== undefined && row.host === me.host && row.pid === me.pid && row.process_start === me.processStart;
      if (row && !mine) {
        const reason = takeoverReason(row, Date.now(), staleMs);
        if (reason === undefined) {
          throw new LeaseHeld(
            `run ${runId} is being run by pid ${row.pid} on ${row.host} (last heartbeat ${row.heartbeat_at})`,
            'wait for it to finish, or stop that runner, then resume',
          );
        }
        log(`run ${runId}: taking over the lease of pid ${row.pid} on ${row.host} (${reason})`);
      }
      const at = new Date().toISOString();
      db.prepare(
        `INSERT INTO run_leases (lease_key, run_id, host, pid, process_start, acquired_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (lease_key) DO UPDATE SET host = excluded.host, pid = excluded.pid, process_start = excluded.process_start,
           acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at`,
      ).run(key, runId, me.host, me.pid, me.processStart, at, at);
      return { ...me, acquiredAt: at };
    })
    .immediate();
}
