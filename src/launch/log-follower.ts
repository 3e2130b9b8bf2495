import { closeSync, type FSWatcher, openSync, readSync, watch } from 'node:fs';
import { LineCutter } from '../util/log-tail.js';

/**
 * Follows a log file the server writes to directly (so the server never depends on us to drain a pipe, and a
 * detached server keeps logging after we exit), handing each complete line to `onLine`. inotify (fs.watch)
 * makes it prompt; a slow poll covers file systems where watching does not work.
 */
export class LogFollower {
  private readonly fd: number;
  private offset: number;
  /** Lines cut as they arrive: a server's 150 MB line is never held whole. */
  private readonly lines = new LineCutter();
  private readonly buffer = Buffer.alloc(64 * 1024);
  private readonly recent: string[] = [];
  private watcher: FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  private readonly keepLines: number;

  /** pollMs: the fallback read cadence (inotify usually hands lines over sooner); keepLines: for lastLines(). */
  constructor(
    path: string,
    startOffset: number,
    private readonly onLine: (line: string) => void,
    options: { keepLines?: number; pollMs?: number } = {},
  ) {
    this.keepLines = options.keepLines ?? 200;
    this.fd = openSync(path, 'r');
    this.offset = startOffset;
    try {
      this.watcher = watch(path, () => this.pump());
      this.watcher.unref();
    } catch {
      // Watching is an optimisation; the poll below still follows the file.
    }
    this.timer = setInterval(() => this.pump(), options.pollMs ?? 100);
    this.timer.unref();
  }

  /** Read everything written so far and hand over complete lines. */
  pump(): void {
    if (this.closed) return;
    for (;;) {
      const bytes = readSync(this.fd, this.buffer, 0, this.buffer.length, this.offset);
      if (bytes === 0) return;
      this.offset += bytes;
      for (const line of this.lines.push(this.buffer.subarray(0, bytes))) this.accept(line);
    }
  }

  /** Final read once the writer is gone: the unterminated last line counts too. */
  drain(): void {
    this.pump();
    const last = this.lines.end();
    if (last) this.accept(last);
  }

  lastLines(count: number): string[] {
    return this.recent.slice(-count);
  }

  close(): void {
    this.watcher?.close();
    clearInterval(this.timer);
    this.watcher = undefined;
    this.timer = undefined;
    if (this.closed) return;
    this.closed = true;
    closeSync(this.fd);
  }

  private accept(line: string): void {
    this.recent.push(line);
    if (this.recent.length > this.keepLines) this.recent.shift();
    this.onLine(line);
  }
}
