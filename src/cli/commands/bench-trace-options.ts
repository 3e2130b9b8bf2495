import type { TraceFormat } from '../../load/trace/types.js';
import type { PromptSource } from '../../load/types.js';
import { durationFlag, positiveNumber, usageError } from './bench-flag-values.js';

/** `servelab bench`'s trace flags into a trace prompt source, in the experiment file's form (load/config.ts checks it). */

export interface TraceFlags {
  trace?: string;
  traceFormat?: TraceFormat;
  traceSpeedup?: string;
  traceWindow?: string;
  traceStart?: string;
  traceDuration?: string;
}

/** The flags that pick a workload other than the trace's own arrivals (see workloadFromFlags). */
interface WorkloadChoice {
  singleStream?: string;
  concurrency?: string;
  rate?: string;
  capacity?: string;
  sessions?: string;
  turns?: string;
  sharedPrefixes?: string;
}

const TRACE_ONLY: ReadonlyArray<[keyof TraceFlags, string]> = [
  ['traceFormat', '--trace-format'],
  ['traceSpeedup', '--trace-speedup'],
  ['traceWindow', '--trace-window'],
  ['traceStart', '--trace-start'],
  ['traceDuration', '--trace-duration'],
];

/** Trace flags that would be silently ignored: without --trace, beside another prompt shape, a speedup of arrivals not replayed. */
export function checkTraceFlags(flags: TraceFlags & WorkloadChoice): void {
  const given = TRACE_ONLY.filter(([key]) => flags[key] !== undefined).map(([, flag]) => flag);
  if (flags.trace === undefined) {
    if (given.length > 0)
      throw usageError(`${given.join(', ')} ${given.length === 1 ? 'shapes' : 'shape'} the replay of --trace`, 'add --trace FILE, or leave them out');
    return;
  }
  if (flags.turns !== undefined || flags.sharedPrefixes !== undefined)
    throw usageError('--trace and --turns / --shared-prefixes are alternatives: the trace sets its own prompts', 'pick one prompt source per run');
  const other = [
    ['--single-stream', flags.singleStream],
    ['--concurrency', flags.concurrency],
    ['--rate', flags.rate],
    ['--capacity', flags.capacity],
  ].find(([, value]) => value !== undefined)?.[0];
  if (flags.traceSpeedup !== undefined && other !== undefined)
    throw usageError(
      `--trace-speedup scales the trace's recorded arrivals, which ${other} replaces (it keeps only the trace's lengths)`,
      `leave out ${other} to replay the arrivals, or leave out --trace-speedup`,
    );
}

/** A trace offset flag: 0, or a duration (90s, 20m, seconds); as the file writes it (see load/config.ts traceOffset). */
function traceOffset(flag: string, text: string): 0 | string {
  if (/^\s*0+(\.0*)?\s*(ms|s|m|h)?\s*$/.test(text)) return 0;
  return `${durationFlag(flag, text)}ms`;
}

/** --trace-window START,END (END may be left out) or --trace-start / --trace-duration, in the file's form. */
function traceWindowFromFlags(flags: TraceFlags): { start: 0 | string; end?: string } | undefined {
  if (flags.traceWindow !== undefined && (flags.traceStart !== undefined || flags.traceDuration !== undefined))
    throw usageError(
      '--trace-window and --trace-start/--trace-duration are alternatives',
      'e.g. --trace-window 10m,15m or --trace-start 10m --trace-duration 5m',
    );
  if (flags.traceWindow !== undefined) {
    const [start = '', end = '', ...rest] = flags.traceWindow.split(',');
    if (rest.length > 0 || start.trim() === '') throw usageError(`--trace-window must be START,END, got "${flags.traceWindow}"`, 'e.g. --trace-window 10m,15m');
    const endOffset = end.trim() === '' ? undefined : traceOffset('--trace-window', end);
    if (endOffset === 0) throw usageError(`--trace-window: END must be after START, got "${flags.traceWindow}"`, 'e.g. --trace-window 10m,15m');
    return { start: traceOffset('--trace-window', start), ...(endOffset !== undefined && { end: endOffset }) };
  }
  if (flags.traceStart === undefined && flags.traceDuration === undefined) return undefined;
  const start = flags.traceStart === undefined ? 0 : traceOffset('--trace-start', flags.traceStart);
  if (flags.traceDuration === undefined) return { start };
  const startMs = start === 0 ? 0 : Number.parseFloat(start);
  return { start, end: `${startMs + durationFlag('--trace-duration', flags.traceDuration)}ms` };
}

export function traceFromFlags(flags: TraceFlags, path: string, seed: number, maxOutputTokens: number | undefined): PromptSource {
  const format = flags.traceFormat ?? (/\.jsonl$/i.test(path) ? 'mooncake' : undefined);
  if (format === undefined) throw usageError('--trace needs --trace-format for this file', 'add --trace-format mooncake, burstgpt or azure');
  const window = traceWindowFromFlags(flags);
  // The window in the file's form: the schema (validatedAsInFile) turns it into milliseconds.
  return {
    kind: 'trace',
    path,
    format,
    ...(flags.traceSpeedup !== undefined && { speedup: positiveNumber('--trace-speedup', flags.traceSpeedup) }),
    ...(window && { window }),
    seed,
    ...(maxOutputTokens !== undefined && { maxOutputTokens }),
  } as unknown as PromptSource;
}
