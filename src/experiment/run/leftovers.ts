import type { Executor } from '../../exec/types.js';
import { groupAlive, stopGroup } from '../../launch/process-group.js';
import type { Db } from '../../store/db.js';
import { unstoppedServers } from '../../store/queries.js';
import { sameProcess } from '../../util/proc-identity.js';
import type { RunJournal } from './journal.js';

/** Same grace as a normal stop: a server that ignores SIGTERM this long gets SIGKILL. */
const STOP_GRACE_MS = 10_000;

/**
 * Before (re)starting a run on this machine (the caller holds the run's lease, so the runner that left these rows is
 * gone): stop the servers it left behind — they run in their own process groups and would still hold the GPU.
 * A process is stopped only when its pid, start time and command line all match what was recorded at spawn: a pid
 * reused by an unrelated process since then is never signalled. A row without that identity is only marked stopped.
 */
export async function reapLeftoverServers(
  db: Db,
  runId: number,
  executor: Executor,
  journal: RunJournal,
  options: { serverKey?: string; log: (line: string) => void },
): Promise<void> {
  if (executor.kind !== 'local') return;
  for (const row of unstoppedServers(db, runId)) {
    if (row.host !== executor.hostLabel || (options.serverKey !== undefined && row.serverKey !== options.serverKey)) continue;
    let message = 'its runner was gone; stopped on resume';
    if (row.pid !== undefined && groupAlive(row.pid)) {
      if (row.pidStart !== undefined && row.pidCmdline !== undefined && sameProcess(row.pid, { start: row.pidStart, cmdline: row.pidCmdline })) {
        options.log(`stopping server (pid ${row.pid}) left running by the interrupted runner`);
        await stopGroup(row.pid, STOP_GRACE_MS);
      } else {
        message = `its runner was gone; pid ${row.pid} is now another process (or its identity was never recorded): not signalled`;
        options.log(`pid ${row.pid} of a leftover server no longer matches the recorded process; leaving it alone`);
      }
    }
    journal.serverUpdate(row.id, { status: 'stopped', phase: 'stopped', message });
  }
}
