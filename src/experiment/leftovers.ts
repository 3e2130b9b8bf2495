import type { Executor } from '../exec/types.js';
import { groupAlive, processAlive, stopGroup } from '../launch/process-group.js';
import type { Db } from '../store/db.js';
import { unstoppedServers } from '../store/queries.js';
import { updateServer } from '../store/runs.js';
import { UserError } from '../util/errors.js';

/** Same grace as a normal stop: a server that ignores SIGTERM this long gets SIGKILL. */
const STOP_GRACE_MS = 10_000;

/**
 * Before (re)starting a run on this machine: refuse while the runner that last worked on it is still alive, and stop
 * the servers a killed runner left behind — they run in their own process groups and would still hold the GPU.
 * The pid is recorded at spawn, so a server still loading its model is stopped too; a row without one (the runner
 * died between inserting the row and spawning) is only marked stopped.
 */
export async function reapLeftoverServers(
  db: Db,
  runId: number,
  executor: Executor,
  options: { serverKey?: string; log: (line: string) => void },
): Promise<void> {
  if (executor.kind !== 'local') return;
  for (const row of unstoppedServers(db, runId)) {
    if (row.host !== executor.hostLabel || (options.serverKey !== undefined && row.serverKey !== options.serverKey)) continue;
    if (row.runnerPid !== undefined && row.runnerPid !== process.pid && processAlive(row.runnerPid)) {
      throw new UserError(`run ${runId} is still being run by process ${row.runnerPid}`, 'wait for it to finish, or stop it with Ctrl-C, then resume');
    }
    if (row.pid !== undefined && groupAlive(row.pid)) {
      options.log(`stopping server (pid ${row.pid}) left running by the interrupted runner`);
      await stopGroup(row.pid, STOP_GRACE_MS);
    }
    updateServer(db, row.id, { status: 'stopped', phase: 'stopped', message: 'its runner was gone; stopped on resume' });
  }
}
