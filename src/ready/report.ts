import { formatSeconds } from '../util/format.js';
import { redactor } from '../util/redact.js';
import { terminalText } from '../util/terminal-text.js';
import { NotReadyError } from './errors.js';
import type { ReadyResult } from './types.js';

/** One line for people: "ready after 3.2s: http://127.0.0.1:8000 (model m; checks: health, models, generation)". */
export function describeReady(result: ReadyResult): string {
  const model = result.model ? `model ${result.model}; ` : '';
  return `ready after ${formatSeconds(result.elapsedMs)}: ${result.baseUrl} (${model}checks: ${result.checks.join(', ')})`;
}

/** The --json document of a failed wait or launch. */
export function failureJson(error: unknown): Record<string, unknown> {
  if (error instanceof NotReadyError) {
    return {
      ok: false,
      kind: error.kind,
      message: error.message,
      hint: error.hint,
      exitCode: error.exitCode,
      elapsedMs: Math.round(error.elapsedMs),
      phases: error.phases,
      ...(error.logTail && { logTail: error.logTail }),
    };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { ok: false, kind: 'error', message, ...(error instanceof Error && 'hint' in error && { hint: (error as { hint: string }).hint }) };
}

/** The server's last log lines on stderr, before the one-line cause: the cause is usually in them. */
export function printLogTail(error: unknown, logPath?: string): void {
  if (!(error instanceof NotReadyError) || !error.logTail?.length) return;
  process.stderr.write(`--- last ${error.logTail.length} lines of the server log${logPath ? ` (${logPath})` : ''} ---\n`);
  for (const line of redactor().args(error.logTail)) process.stderr.write(`  ${terminalText(line)}\n`);
  process.stderr.write('---\n');
}
