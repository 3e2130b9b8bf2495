import { setTimeout as delay } from 'node:timers/promises';

/**
 * A pid that can name a server's process group. 0 and 1 cannot: kill(-0) is the caller's own group (a recorded pid
 * of 0, "no process", once stopped a whole test run with it) and kill(-1) every process the caller may signal.
 */
function isGroupLeaderPid(pid: number): boolean {
  return Number.isInteger(pid) && pid > 1;
}

/** Send a signal to every process of the group led by `pid`; false when the group no longer exists. */
export function signalGroup(pid: number, signal: NodeJS.Signals): boolean {
  if (!isGroupLeaderPid(pid)) return false;
  try {
    process.kill(-pid, signal);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** Whether any process of the group still exists (EPERM: it exists but belongs to someone else). */
export function groupAlive(pid: number): boolean {
  if (!isGroupLeaderPid(pid)) return false;
  try {
    process.kill(-pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function waitGone(pid: number, withinMs: number): Promise<boolean> {
  const until = Date.now() + withinMs;
  while (groupAlive(pid)) {
    if (Date.now() >= until) return false;
    await delay(25);
  }
  return true;
}

/**
 * SIGTERM the whole group (servers fork workers: killing only the leader orphans them, still holding GPU memory),
 * SIGKILL whatever is left after the grace period, and resolve once the group is gone.
 */
export async function stopGroup(pid: number, graceMs: number): Promise<void> {
  if (!signalGroup(pid, 'SIGTERM')) return;
  if (await waitGone(pid, graceMs)) return;
  signalGroup(pid, 'SIGKILL');
  if (!(await waitGone(pid, 5_000))) throw new Error(`process group ${pid} survived SIGKILL`);
}
