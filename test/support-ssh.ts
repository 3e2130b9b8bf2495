/** Shared by the SSH executor tests: the CI sshd, the servelab binary, and a look at this machine's processes. */

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CI_DIR } from './support-services.js';

export const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));

/** A model name unique to one test: finds that test's server processes on the "host" (this machine). */
export function uniqueModel(): string {
  return `ssh-test-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}

/** Every process as pid, parent pid and command line, from /proc (slim CI images have no procps/pgrep). */
export function processTable(): Array<{ pid: number; ppid: number; cmdline: string }> {
  const table = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) follows the command name, which is in parentheses and may contain spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      table.push({ pid: Number(entry), ppid, cmdline });
    } catch {
      // exited while we looked
    }
  }
  return table;
}

/** Pids of processes whose command line contains `token`. */
export function processesWith(token: string): number[] {
  return processTable()
    .filter((entry) => entry.cmdline.includes(token) && entry.pid !== process.pid)
    .map((entry) => entry.pid);
}

/** Drop every connection to the test sshd: kill its per-connection processes (children of the listener). */
export function killSshdSessions(): number {
  const listener = readFileSync(join(CI_DIR, 'ssh', 'sshd.pid'), 'utf8').trim();
  const children = processTable()
    .filter((entry) => entry.ppid === Number(listener))
    .map((entry) => entry.pid);
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return children.length;
}
