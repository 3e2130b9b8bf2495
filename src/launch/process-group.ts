import { readdirSync, readFileSync } from 'node:fs';
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
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return liveMemberOf(pid) ?? true;
}

/**
 * Whether the group has a member that has not exited, from /proc (undefined where there is none). A member that
 * exited stays a zombie until its parent reaps it, and kill(-pgid, 0) still finds it: the watchdog subshell's parent
 * is the server it exec'd (launch/watchdog.ts), so once both are gone it waits for init — 1.4 s per stop on the dev
 * box (2 s a restart in bench/campaign-cost), never where servelab itself is a container's pid 1. A zombie holds no
 * memory, port or GPU: such a group is gone.
 */
function liveMemberOf(pgid: number): boolean | undefined {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    if (entry.charCodeAt(0) < 48 || entry.charCodeAt(0) > 57) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // "pid (comm) state ppid pgrp …": comm may hold spaces and parentheses, so the fields start after the last ')'.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z') return true;
  }
  return false;
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
