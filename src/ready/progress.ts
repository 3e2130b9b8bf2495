import { formatSeconds } from '../util/format.js';
import { formatPrediction } from './predict.js';
import type { ReadyProgress } from './types.js';

/** "[ 42s] loading weights · last ready after 60s, ~18s left · 503: Loading model" */
export function formatProgressLine(progress: ReadyProgress): string {
  const parts = [`[${formatSeconds(progress.elapsedMs).padStart(6)}] ${progress.phase}`];
  const prediction = formatPrediction(progress.elapsedMs, progress.previousReadyMs, progress.predictedRemainingMs);
  if (prediction) parts.push(prediction);
  if (progress.detail) parts.push(progress.detail);
  return parts.join(' · ');
}

const NON_TTY_INTERVAL_MS = 10_000;

/**
 * Progress on stderr. A terminal gets one line rewritten in place; a log file or CI gets a line per phase
 * change and one every ~10 s, so it stays readable.
 */
export function createProgressReporter(stream: NodeJS.WriteStream = process.stderr): { report: (progress: ReadyProgress) => void; finish: () => void } {
  const tty = stream.isTTY === true;
  let lastPhase: string | undefined;
  let lastPrintedAt = -Infinity;
  let drawn = false;
  return {
    report(progress) {
      const line = formatProgressLine(progress);
      if (tty) {
        const width = stream.columns || 120;
        stream.write(`\r\u001b[2K${line.length > width - 1 ? `${line.slice(0, width - 2)}…` : line}`);
        drawn = true;
        return;
      }
      if (progress.phase !== lastPhase || progress.elapsedMs - lastPrintedAt >= NON_TTY_INTERVAL_MS) {
        stream.write(`${line}\n`);
        lastPhase = progress.phase;
        lastPrintedAt = progress.elapsedMs;
      }
    },
    finish() {
      if (tty && drawn) stream.write('\r\u001b[2K');
      drawn = false;
    },
  };
}
