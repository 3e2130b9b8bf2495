import type { BenchProgress } from '../load/types.js';
import { formatProgress } from '../metrics/table.js';

/** Live progress on stderr: redrawn in place on a terminal, one line per finished level otherwise. */
export function progressRenderer(enabled: boolean) {
  const tty = process.stderr.isTTY === true;
  let last: BenchProgress | undefined;
  let lastDraw = 0;
  const flush = () => {
    if (last) process.stderr.write(tty ? `\r\x1b[K${formatProgress(last)}\n` : `${formatProgress(last)}\n`);
    last = undefined;
  };
  return {
    update(progress: BenchProgress) {
      if (!enabled) return;
      if (last && last.levelLabel !== progress.levelLabel) flush();
      last = progress;
      const now = Date.now();
      if (tty && now - lastDraw >= 100) {
        lastDraw = now;
        process.stderr.write(`\r\x1b[K${formatProgress(progress)}`);
      }
    },
    flush,
  };
}
