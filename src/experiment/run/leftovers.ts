import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { Executor } from '../../exec/types.js';
import { groupAlive, stopGroup } from '../../launch/process-group.js';
import type { Db } from '../../store/db.js';
import { unstoppedServers } from '../../store/queries.js';
import { processAlive, sameProcess } from '../../util/proc-identity.js';
import type { RunJournal } from './journal.js';

/**
 * The tag of the jobs a run (or one of its lanes) starts on SSH hosts: this store, the run, the lane. A runner that
 * holds the run's lease stops the jobs it finds with its tag on a host before starting anything there: a killed
 * runner of the same run left them (SshExecutorContext.jobTag).
 */
export function remoteJobTag(db: Db, runId: number, lane?: number): string {
  const store = createHash('sha256').update(`${hostname()}:${db.name}`).digest('hex').slice(0, 8);
  return `s${store}r${runId}${lane === undefined ? '' : `l${lane}`}`;
}

/** Same grace as a normal stop: a server that ignores SIGTERM this long gets SIGKILL. */
const STOP_GRACE_MS = 10_000;

/**
 * Before (re)starting a run on this machine (the caller holds the run's lease, so the runner that left these rows is
 * gone): stop the servers it left behind — they run in their own process groups and would still hold the GPU.
 * A process is stopped only when its pid, start time and command line all match what was recorded once it ran the
 * server: a pid reused by an unrelated process since then is never signalled. A group whose leader has exited is
 * reported, not signalled (a later process may lead it). On an SSH host the executor stops the jobs tagged with
 * this part of the run (exec/ssh.ts stopLeftovers). Each row says what happened — never "stopped on resume" for a
 * process left running, never `ready` for one that is gone.
 */
export async function reapLeftoverServers(
  db: Db,
  runId: number,
  executor: Executor,
  journal: RunJournal,
  options: { lane?: number; log: (line: string) => void },
): Promise<void> {
  // A lane reaps only its own rows: another lane (a Slurm job, an SSH host) may run beside it on the same host.
  const rows = unstoppedServers(db, runId).filter((row) => row.host === executor.hostLabel && (options.lane === undefined || (row.lane ?? 0) === options.lane));
  if (executor.kind === 'local') {
    for (const row of rows) journal.serverUpdate(row.id, { status: 'stopped', phase: 'stopped', message: await reap(row, options.log) });
    return;
  }
  const stopped = await executor.stopLeftovers?.();
  if (stopped === undefined) return;
  for (const row of rows) {
    const job = stopped.find((each) => each.pid !== undefined && each.pid === row.pid);
    const message = job
      ? `its runner was gone; stopped on resume (${job.dir} on ${executor.hostLabel})`
      : `its runner was gone; no job of it was left on ${executor.hostLabel} (it had exited, or its watchdog stopped it)`;
    journal.serverUpdate(row.id, { status: 'stopped', phase: 'stopped', message });
  }
}

/** Stop one leftover server if it is still ours; what happened, for its row. */
async function reap(row: { pid?: number; pidStart?: string; pidCmdline?: string }, log: (line: string) => void): Promise<string> {
  // Killed before its pid was recorded: its watchdog, in place from the spawn on, stopped it with its runner.
  if (row.pid === undefined) return 'its runner was gone before the server ran (no pid recorded; its watchdog stops it with its runner)';
  if (!groupAlive(row.pid)) return 'its runner was gone; the server had exited';
  if (!processAlive(row.pid)) {
    log(`the leftover server's pid ${row.pid} has exited but its process group runs on; leaving it alone`);
    return `its runner was gone; pid ${row.pid} has exited but process group ${row.pid} runs on (its workers?): not signalled, check it`;
  }
  if (row.pidStart === undefined || row.pidCmdline === undefined || !sameProcess(row.pid, { start: row.pidStart, cmdline: row.pidCmdline })) {
    log(`pid ${row.pid} of a leftover server no longer matches the recorded process; leaving it alone`);
    return `its runner was gone; pid ${row.pid} is now another process (or its identity was never recorded): not signalled, check it`;
  }
  log(`stopping server (pid ${row.pid}) left running by the interrupted runner`);
  await stopGroup(row.pid, STOP_GRACE_MS);
  return 'its runner was gone; stopped on resume';
}
