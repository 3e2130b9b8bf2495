import { type ChildProcess, spawn } from 'node:child_process';
import type { Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { processIdentity } from '../util/proc-identity.js';
import { notRunnable } from '../util/program-path.js';
import { redactor } from '../util/redact.js';

/**
 * A local server is spawned already watched, so no instant exists at which a runner killed with SIGKILL (or quit with
 * a second Ctrl-C while its server ignores SIGTERM) leaves a server holding the GPU. The spawned process is a tiny
 * `sh` in its own process group that first forks its watchdog — a subshell of the same group — and only then
 * `exec`s the server in its place: same pid, same group, the watchdog already there. (A watchdog spawned after the
 * server left a window between the two spawns: ~70 kills timed around a spawn left 2 orphan servers, issue 33.)
 *
 * The watchdog needs no polling and no pid: its fd 3 is a socket whose other end only this process holds (Node
 * opens it close-on-exec, so no other child inherits it; the server gets fd 3 closed). When this process dies,
 * however it dies — even before `spawn` returned — the kernel closes its end and `read` returns at once: the
 * watchdog SIGTERMs the group (ignoring it itself), and SIGKILLs what is left once the server has exited or the grace
 * is over. A line on the socket releases it instead: the server exited, or is meant to outlive this process. Until
 * then it dies with the group on a normal stop (stopGroup).
 */
const GUARD = [
  '(',
  '  if read -r _ <&3; then exit 0; fi',
  '  echo "servelab: the process that launched this server (pid $1) is gone; stopping process group $$"',
  '  trap "" TERM',
  // dash's kill takes no "--": `kill -TERM -PGID` is the portable spelling for a process group.
  '  kill -TERM -$$ 2>/dev/null',
  '  i=0',
  '  while kill -0 $$ 2>/dev/null && [ "$i" -lt "$2" ]; do sleep 0.1; i=$((i+1)); done',
  '  kill -KILL -$$ 2>/dev/null',
  ') &',
  'exec 3<&-',
  'shift 2',
  'exec "$@"',
].join('\n');

export interface GuardedChild {
  /** The server's process (the guard `sh` until it has exec'd the server: same pid); it leads its own group. */
  child: ChildProcess;
  /** The server exited, or is meant to outlive this process: the watchdog exits without a signal. */
  release(): void;
  /** Resolves once `pid` runs the server itself, not the guard `sh` (identity read then is the server's). */
  execed(): Promise<void>;
}

/**
 * Spawn `command` in its own process group with its watchdog (see GUARD), output to `logFd`. A server that ignores
 * SIGTERM gets SIGKILL after `graceMs`, as with a normal stop. The command is looked up first (the guard `sh` would
 * only report a missing one in the log): returns the reason when it cannot be run.
 */
export function spawnGuarded(
  command: readonly string[],
  options: { env: Record<string, string>; cwd?: string; logFd: number; graceMs: number },
): GuardedChild | { missing: string } {
  const missing = notRunnable(command[0]!, options.env.PATH ?? '', options.cwd);
  if (missing !== undefined) return { missing };
  const argv = ['-c', GUARD, 'servelab-watchdog', String(process.pid), String(Math.ceil(options.graceMs / 100)), ...command];
  const child = spawn('/bin/sh', argv, {
    detached: true,
    stdio: ['ignore', options.logFd, options.logFd, 'pipe'],
    env: options.env,
    ...(options.cwd !== undefined && { cwd: options.cwd }),
  });
  const guard = child.stdio[3] as Socket | null;
  // Neither the socket nor the child may keep this process alive, or throw when the watchdog is gone.
  guard?.on('error', () => {});
  guard?.unref();
  const guardCmdline = redactor()
    .args(['/bin/sh', ...argv])
    .join(' ');
  return {
    child,
    // Written at once (an empty socket takes it synchronously): a detaching `servelab launch` exits right after.
    release: () => {
      if (guard && !guard.destroyed) guard.end('released\n');
    },
    async execed() {
      for (let waited = 0; waited < 5_000; waited += 2) {
        const identity = child.pid === undefined ? undefined : processIdentity(child.pid);
        if (identity?.cmdline !== guardCmdline) return;
        await delay(2);
      }
    },
  };
}
