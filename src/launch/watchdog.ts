import { spawn } from 'node:child_process';
import { signalChild } from '../util/child-signal.js';

/**
 * The local twin of the SSH job's watchdog (exec/remote-shell.ts): a tiny `sh` in its own session that stops a
 * server's process group once the process that launched it is gone, so a runner killed with SIGKILL (or quit with
 * a second Ctrl-C while its server ignores SIGTERM) leaves no server holding the GPU.
 *
 * It needs no polling and no pid: its stdin is a pipe whose only writer is this process (Node opens pipes
 * close-on-exec, so no other child inherits it). When this process dies, however it dies, the kernel closes the pipe
 * and `read` returns at once. A server that exited or is detached releases its watchdog: it is killed first.
 */
const SCRIPT = [
  'read -r line',
  'echo "servelab: the process that launched this server (pid $2) is gone; stopping process group $1"',
  // dash's kill takes no "--": `kill -TERM -PGID` is the portable spelling for a process group.
  'kill -TERM -"$1" 2>/dev/null || exit 0',
  'i=0',
  'while kill -0 -"$1" 2>/dev/null; do',
  '  if [ "$i" -ge "$3" ]; then kill -KILL -"$1" 2>/dev/null; exit 0; fi',
  '  sleep 0.1; i=$((i+1))',
  'done',
].join('\n');

export interface Watchdog {
  /** The server was stopped, or is meant to outlive this process: the watchdog exits without a signal. */
  release(): void;
}

/**
 * Watch process group `pgid` on behalf of this process; the watchdog's lines go to `logFd` (the server log).
 * A server that ignores SIGTERM gets SIGKILL after `graceMs`, as with a normal stop.
 */
export function startWatchdog(pgid: number, logFd: number, graceMs: number): Watchdog {
  const child = spawn('/bin/sh', ['-c', SCRIPT, 'servelab-watchdog', String(pgid), String(process.pid), String(Math.ceil(graceMs / 100))], {
    detached: true,
    stdio: ['pipe', logFd, logFd],
  });
  // Neither the watchdog nor its pipe may keep this process alive; a missing /bin/sh only means no watchdog.
  child.on('error', () => {});
  child.stdin?.on('error', () => {});
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  // SIGKILL, synchronously: a detaching `servelab launch` exits right after, before any write to the pipe could land.
  // The watchdog is this process's child, so its pid cannot be reused until Node has reaped it (then kill is a no-op).
  return { release: () => void signalChild(child, 'SIGKILL') };
}
