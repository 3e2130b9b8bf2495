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
    let text = buffer.toString('utf8');
    if (start > 0) text = text.slice(text.indexOf('\n') + 1);
    return { text, size, truncated: start > 0 };
  } finally {
    await handle.close();
  }
}
