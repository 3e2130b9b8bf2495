import type { ChildProcess } from 'node:child_process';

/**
 * Signal a child process; false when it never started or has already ended. Node's own `child.kill()` is unsafe on a
 * child whose spawn failed (a missing program): called before the spawn error is delivered, it signals pid 0, which
 * is this process's whole process group (Node 20). A missing `nvidia-smi` whose sampler stopped in that window once
 * SIGKILLed every process of a test run, the runner's shell included.
 */
export function signalChild(child: ChildProcess, signal: NodeJS.Signals): boolean {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return false;
  return child.kill(signal);
}
