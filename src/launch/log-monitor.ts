import { classifyLogLine } from '../profiles/classify.js';
import type { ServerProfile } from '../profiles/types.js';
import type { MonitorEvent, ServerMonitor } from '../ready/wait.js';
import { LogFollower } from './log-follower.js';
import type { ExitInfo } from './types.js';

interface FatalLine {
  name: string;
  hint: string;
  line: string;
  rank: number;
}

/**
 * Reads a server's log (written directly by a local server, mirrored from the host for a remote one) and reports
 * phases, fatal lines and the exit to the readiness wait. The same rules for every launcher: the first fatal line
 * starts a settle time in which a more specific one replaces it (the exception after "Traceback" names the cause,
 * e.g. CUDA OOM), and a process that exits meanwhile is reported with its exit code and that line.
 */
export class LogMonitor implements ServerMonitor {
  private readonly listeners = new Set<(event: MonitorEvent) => void>();
  private readonly follower: LogFollower;
  private lastPhase: string | undefined;
  private fatal: FatalLine | undefined;
  private exited = false;

  /** settleMs: how long more log may take to arrive (longer where the log is mirrored by polling). */
  constructor(
    private readonly profile: ServerProfile,
    logPath: string,
    startOffset: number,
    private readonly settleMs: number,
  ) {
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
    this.publish({ type: 'exit', info, ...(this.fatal && { fatal: describe(this.fatal) }) });
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
    const found = classifyLogLine(this.profile, line);
    if (found?.kind === 'phase' && found.name !== this.lastPhase) {
      this.lastPhase = found.name;
      this.publish({ type: 'phase', name: found.name });
    } else if (found?.kind === 'fatal') {
      // A server that stays up after a fatal line (OOM in a worker, NCCL hang) is failed once the settle time ends.
      if (!this.fatal) setTimeout(() => this.exited || this.publish({ type: 'fatal', ...describe(this.fatal!) }), this.settleMs).unref();
      if (!this.fatal || found.rank < this.fatal.rank) this.fatal = { name: found.name, hint: found.hint, line, rank: found.rank };
    }
  }

  private publish(event: MonitorEvent): void {
    for (const listener of this.listeners) listener(event);
  }
}

function describe(fatal: FatalLine): { name: string; hint: string; line: string } {
  return { name: fatal.name, hint: fatal.hint, line: fatal.line };
}
