import { formatLanesLine, formatLanesView, type LanesView } from '../experiment/run/lane-status.js';
import { terminalText } from '../util/terminal-text.js';

/** A log file or CI gets the lanes' state as one line at most this often (and only when it changed). */
const NON_TTY_INTERVAL_MS = 30_000;
/** A terminal's block is redrawn at most this often between log lines. */
const TTY_INTERVAL_MS = 200;

/**
 * `run`'s stderr on lanes: log lines as they come, and each lane's state (cli/../run/lane-status.ts). A terminal
 * keeps a short block under the log, redrawn in place (cleared before each log line, drawn again after it); a log
 * file or CI gets no control characters, only a one-line summary every 30 s while something changed.
 */
export function laneProgress(stream: NodeJS.WriteStream = process.stderr) {
  const tty = stream.isTTY === true;
  let view: LanesView | undefined;
  let drawnLines = 0;
  let lastDraw = 0;
  let lastLine = '';
  let lastLineAt = Date.now();
  const clear = () => {
    if (drawnLines > 0) stream.write(`\x1b[${drawnLines}F\x1b[J`);
    drawnLines = 0;
  };
  const draw = () => {
    if (!view) return;
    const width = Math.max(20, (stream.columns || 120) - 1);
    // A line wider than the terminal wraps and the block's height would be wrong: each is cut to the width.
    const lines = formatLanesView(view).map((line) => terminalText(line.length > width ? `${line.slice(0, width - 1)}…` : line));
    stream.write(`${lines.join('\n')}\n`);
    drawnLines = lines.length;
    lastDraw = Date.now();
  };
  return {
    log(line: string): void {
      if (!tty) return void stream.write(`${line}\n`);
      clear();
      stream.write(`${line}\n`);
      draw();
    },
    update(next: LanesView): void {
      view = next;
      const now = Date.now();
      if (tty) {
        if (now - lastDraw < TTY_INTERVAL_MS) return;
        clear();
        draw();
        return;
      }
      const line = formatLanesLine(next);
      if (now - lastLineAt < NON_TTY_INTERVAL_MS || line === lastLine) return;
      stream.write(`${terminalText(line)}\n`);
      lastLine = line;
      lastLineAt = now;
    },
    /** The block goes before the run's final text. */
    finish(): void {
      if (tty) clear();
      view = undefined;
    },
  };
}
