import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { open } from 'node:fs/promises';

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
    return lines.slice(-count);
  } finally {
    closeSync(fd);
  }
}

/** A window cut from the middle of a file starts mid-line: drop that partial line. */
function fromLineStart(buffer: Buffer, cut: boolean): string {
  const text = buffer.toString('utf8');
  return cut ? text.slice(text.indexOf('\n') + 1) : text;
}
