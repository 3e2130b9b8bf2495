import { type FatalLine, StartupLog } from '../profiles/startup-log.js';
import type { ServerProfile } from '../profiles/types.js';
import type { MonitorEvent, ServerMonitor } from '../ready/wait.js';
import { LogFollower } from './log-follower.js';
import type { ExitInfo } from './types.js';

/**
 * Reads a server's log (written directly by a local server, mirrored from the host for a remote one) and reports
 * phases, fatal lines and the exit to the readiness wait. The same rules for every launcher: the first fatal line
 * starts a settle time in which a more specific one replaces it (StartupLog: the exception after "Traceback" or
 * "engine failed to start" names the cause, e.g. CUDA OOM), and a process that exits meanwhile is reported with its
 * exit code and that line.
 */
export class LogMonitor implements ServerMonitor {
  private readonly listeners = new Set<(event: MonitorEvent) => void>();
  private readonly follower: LogFollower;
  private readonly reading: StartupLog;
  private exited = false;

  /** settleMs: how long more log may take to arrive (longer where the log is mirrored by polling). */
  constructor(
    profile: ServerProfile,
    logPath: string,
    startOffset: number,
    private readonly settleMs: number,
  ) {
    this.reading = new StartupLog(profile);
    this.follower = new LogFollower(logPath, startOffset, (line) => this.onLine(line));
  }

  subscribe(listener: (event: MonitorEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The process ended: read the rest of its log first, so the exit carries the most specific fatal line. */
  processExited(info: ExitInfo): void {
    this.exited = true;
    this.follower.drain();
    const fatal = this.reading.fatal;
    this.publish({ type: 'exit', info, ...(fatal && { fatal: describe(fatal) }) });
  }

  drain(): void {
    this.follower.drain();
  }

  lastLines(count: number): string[] {
    return this.follower.lastLines(count);
  }

  close(): void {
    this.follower.close();
  }

  private onLine(line: string): void {
    const change = this.reading.accept(line);
    if (change?.kind === 'phase') this.publish({ type: 'phase', name: change.name });
    // A server that stays up after a fatal line (OOM in a worker, NCCL hang) is failed once the settle time ends.
    else if (change?.kind === 'first-fatal') {
      setTimeout(() => this.exited || this.publish({ type: 'fatal', ...describe(this.reading.fatal!) }), this.settleMs).unref();
    }
  }

  private publish(event: MonitorEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}

function describe(fatal: FatalLine): { name: string; hint: string; line: string } {
  return { name: fatal.name, hint: fatal.hint, line: fatal.line };
}
