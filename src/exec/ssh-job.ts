import { setTimeout as delay } from 'node:timers/promises';
import { UserError } from '../util/errors.js';
import { type DetachedJob, type JobState, parsePollReply, parseStarted, pollScript, removeJobScript, startDetachedScript, stopScript } from './remote-shell.js';
import type { SshTransport } from './ssh-transport.js';

const POLL_TIMEOUT_MS = 30_000;
const MAX_LOG_BYTES_PER_POLL = 1024 * 1024;

/**
 * A process running detached on the host (see startDetachedScript). Everything after the start goes through
 * idempotent polls, so a dropped connection only delays them: the process itself never depends on our session.
 */
export class RemoteJob {
  readonly dir: string;
  readonly pid: number;
  readonly pgid: number;
  private readonly transport: SshTransport;
  private offset = 0;
  private lastState: JobState = { kind: 'alive' };

  private constructor(transport: SshTransport, dir: string, pid: number, pgid: number) {
    this.transport = transport;
    this.dir = dir;
    this.pid = pid;
    this.pgid = pgid;
  }

  /** Start it in a fresh directory (the start script is idempotent per directory, so a retry cannot start it twice). */
  static async start(transport: SshTransport, job: DetachedJob, what: string): Promise<RemoteJob> {
    const result = await transport.execRetrying(startDetachedScript(job), { timeoutMs: 60_000, what: `starting ${what}` });
    const started = parseStarted(result.stdout.toString('utf8'));
    if (result.code !== 0 || !started) {
      const reason = result.stderr.trim().split('\n').pop() || `exit code ${result.code}`;
      throw new UserError(
        `cannot start ${what} on ${transport.label}: ${reason}`,
        `check that \`ssh ${transport.label}\` works and that ${job.dir} is writable there`,
      );
    }
    return new RemoteJob(transport, job.dir, started.pid, started.pgid);
  }

  get state(): JobState {
    return this.lastState;
  }

  /** One poll: new log bytes (in order, never twice) and the current state. Survives connection drops by retrying. */
  async poll(signal?: AbortSignal): Promise<{ state: JobState; logBytes: Buffer }> {
    for (;;) {
      const result = await this.transport.execRetrying(pollScript(this.dir, this.offset, MAX_LOG_BYTES_PER_POLL), {
        timeoutMs: POLL_TIMEOUT_MS,
        what: `watching ${this.dir}`,
        ...(signal && { signal }),
      });
      const reply = result.code === 0 ? parsePollReply(result.stdout) : undefined;
      if (reply) {
        this.offset += reply.logBytes.length;
        this.lastState = reply.state;
        return { state: reply.state, logBytes: reply.logBytes };
      }
      // A reply cut short (timeout, connection lost mid-output): nothing was consumed, ask again.
      if (signal?.aborted) return { state: this.lastState, logBytes: Buffer.alloc(0) };
      await delay(1000);
    }
  }

  /** TERM the job's process group, KILL after the grace period; resolves once no process of it is left. */
  async stop(graceSeconds: number): Promise<void> {
    const result = await this.transport.execRetrying(stopScript(this.dir, graceSeconds), {
      timeoutMs: (graceSeconds + 15) * 1000,
      what: `stopping the job in ${this.dir}`,
    });
    const said = result.stdout.toString('utf8').trim();
    if (said === 'still-running') {
      throw new UserError(
        `processes of the job in ${this.dir} on ${this.transport.label} survived SIGKILL (process group ${this.pgid})`,
        `log in to ${this.transport.label} and check \`ps -g ${this.pgid}\``,
      );
    }
  }

  /** Delete the job directory once its log and results have been read back. */
  async remove(): Promise<void> {
    await this.transport.execRetrying(removeJobScript(this.dir), { timeoutMs: 30_000, what: `removing ${this.dir}` });
  }

  /** Blocking stop for process exit, when promises no longer run. */
  stopSync(graceSeconds: number): void {
    this.transport.execSync(stopScript(this.dir, graceSeconds), (graceSeconds + 10) * 1000);
  }
}
