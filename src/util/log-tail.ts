import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';

/**
 * Longest log line kept whole. A server can write one line of 150 MB (a tensor dump, a JSON blob of every request):
 * echoed as a cause it fills the terminal, matched against every pattern it costs seconds. Startup and fatal lines
 * are a few hundred characters; the rest of a longer line is dropped and its length said.
 */
export const MAX_LOG_LINE_CHARS = 4096;

/** A log line as shown and matched: at most MAX_LOG_LINE_CHARS, and how much was cut. */
export function cutLogLine(line: string, fullLength = line.length): string {
  if (fullLength <= MAX_LOG_LINE_CHARS) return line;
  return `${line.slice(0, MAX_LOG_LINE_CHARS)}… (${fullLength - MAX_LOG_LINE_CHARS} more characters cut)`;
}

/**
 * Gathers the lines of a text arriving in chunks, each line cut as `cutLogLine` does while it arrives: a line of
 * 150 MB never becomes one string. `push` returns the lines a chunk completed; `end` the unterminated last one.
 */
export class LineCutter {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';
  private partialLength = 0;
  private pendingCR = false;

  push(chunk: Buffer): string[] {
    return this.split(this.decoder.write(chunk));
  }

  end(): string | undefined {
    this.append(this.decoder.end());
    const last = this.partialLength > 0 ? cutLogLine(this.partial, this.partialLength) : undefined;
    this.partial = '';
    this.partialLength = 0;
    return last;
  }

  private split(text: string): string[] {
    const lines: string[] = [];
    // A CRLF split across chunks: its LF ends no second line.
    let from = this.pendingCR && text.startsWith('\n') ? 1 : 0;
    this.pendingCR = false;
    const breaks = /\r\n|\n|\r/g;
    breaks.lastIndex = from;
    for (let found = breaks.exec(text); found; found = breaks.exec(text)) {
      this.append(text.slice(from, found.index));
      lines.push(cutLogLine(this.partial, this.partialLength));
      this.partial = '';
      this.partialLength = 0;
      from = breaks.lastIndex;
      if (found[0] === '\r' && from === text.length) this.pendingCR = true;
    }
    this.append(text.slice(from));
    return lines;
  }

  private append(text: string): void {
    if (this.partial.length < MAX_LOG_LINE_CHARS) this.partial += text.slice(0, MAX_LOG_LINE_CHARS - this.partial.length);
    this.partialLength += text.length;
  }
}

/** Every line of a log file, each cut to MAX_LOG_LINE_CHARS, read in chunks (`servelab log` on a file of any size). */
export function readLogLines(path: string): string[] {
  const fd = openSync(path, 'r');
  try {
    const cutter = new LineCutter();
    const buffer = Buffer.alloc(1024 * 1024);
    const lines: string[] = [];
    for (let bytes = readSync(fd, buffer); bytes > 0; bytes = readSync(fd, buffer)) for (const line of cutter.push(buffer.subarray(0, bytes))) lines.push(line);
    const last = cutter.end();
    if (last !== undefined) lines.push(last);
    return lines;
  } finally {
    closeSync(fd);
  }
}

export interface LogTail {
  text: string;
  /** File size in bytes (0 when the file does not exist yet). */
  size: number;
  /** True when older output was cut off. */
  truncated: boolean;
}

/** The last `maxBytes` of a log file, starting at a line boundary; a missing file is an empty log (not started yet). */
export async function readLogTail(path: string, maxBytes = 64 * 1024): Promise<LogTail> {
  let handle;
  try {
    handle = await open(path, 'r');
  } catch {
    return { text: '', size: 0, truncated: false };
  }
  try {
    const { size } = await handle.stat();
    const start = Math.max(0, size - maxBytes);
    const buffer = Buffer.alloc(size - start);
    await handle.read(buffer, 0, buffer.length, start);
    return { text: fromLineStart(buffer, start > 0), size, truncated: start > 0 };
  } finally {
    await handle.close();
  }
}

/**
 * The last `count` lines of a log, reading only its last `maxBytes` (logs of a long model load can be large);
 * a missing log has no lines. Synchronous: it runs on failure paths that report the tail at once.
 */
export function readLastLines(path: string, count: number, maxBytes = 256 * 1024): string[] {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return [];
  }
  try {
    const stat = fstatSync(fd);
    // A directory opens for reading on Linux but cannot be read: it has no lines either.
    if (!stat.isFile()) return [];
    const size = stat.size;
    const start = Math.max(0, size - maxBytes);
    const buffer = Buffer.alloc(size - start);
    readSync(fd, buffer, 0, buffer.length, start);
    const lines = fromLineStart(buffer, start > 0).split(/\r\n|\n|\r/);
    if (lines.at(-1) === '') lines.pop();
    return lines.slice(-count).map((line) => cutLogLine(line));
  } finally {
    closeSync(fd);
  }
}

/** A window cut from the middle of a file starts mid-line: drop that partial line. */
function fromLineStart(buffer: Buffer, cut: boolean): string {
  const text = buffer.toString('utf8');
  return cut ? text.slice(text.indexOf('\n') + 1) : text;
}
