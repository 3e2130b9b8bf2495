import { UserError } from '../../util/errors.js';
import { type LocatedRecord, textRecords } from '../datasets/records.js';
import { checkRequestTokens } from '../request-bounds.js';
import type { TraceFormat, TraceRecord, TraceSource } from './types.js';

/**
 * Readers of the public production traces, each checked against its published file:
 *
 * - mooncake: JSON Lines `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, …]}`,
 *   timestamp in ms from the trace's start, hash_ids the remapped hashes of the prompt's 512-token blocks (requests
 *   sharing leading ids share that prefix). kvcache-ai/Mooncake FAST25-release/README.md and
 *   FAST25-release/traces/conversation_trace.jsonl.
 * - burstgpt: CSV `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type`, Timestamp in seconds from
 *   0:00 of the first day; Response tokens 0 marks a failed request in BurstGPT_1.csv / _2.csv. HPMLL/BurstGPT
 *   README.md ("Schema") and data/BurstGPT_1.csv.
 * - azure: CSV `TIMESTAMP,ContextTokens,GeneratedTokens`, TIMESTAMP a date-time like `2023-11-16 18:17:03.9799600`
 *   (UTC; an explicit offset such as `+00:00` is honoured). Azure/AzurePublicDataset AzureLLMInferenceDataset2023.md
 *   ("Schema") and data/AzureLLMInferenceTrace_code.csv / _conv.csv; the 2024 week-long trace has the same columns.
 */

const HINT: Record<TraceFormat, string> = {
  mooncake: 'each line must be like {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47]} (or check --trace-format)',
  burstgpt: 'BurstGPT rows are Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type (or check --trace-format)',
  azure: 'Azure LLM inference rows are TIMESTAMP,ContextTokens,GeneratedTokens (or check --trace-format)',
};

/**
 * Every request of a trace file, in file order, each within the model's context (`contextTokens`, else servelab's
 * cap) with its output as sent (`maxOutputTokens` applied, at least 1). Synchronous, so an experiment file's traces
 * are checked as it loads, before any server starts. Throws UserError naming the file, line, field and what was expected.
 */
export function readTrace(path: string, format: TraceFormat, bounds: Pick<TraceSource, 'maxOutputTokens'> & { contextTokens?: number } = {}): TraceRecord[] {
  const records = traceRows(path, format);
  if (format !== 'mooncake' && records[0]) checkColumns(path, format, records[0]);
  return records.map((located) => {
    const record = traceRecord(located, format);
    checkRequestTokens(record.where, record.inputTokens, sentOutputTokens(record, bounds.maxOutputTokens), bounds.contextTokens);
    return record;
  });
}

/** The max_tokens a trace request is sent with: its recorded output, capped, at least 1 (a failed request of the trace still arrived). */
export function sentOutputTokens(record: TraceRecord, maxOutputTokens: number | undefined): number {
  return Math.max(1, maxOutputTokens ? Math.min(record.outputTokens, maxOutputTokens) : record.outputTokens);
}

/** The file's rows; a read or syntax error names the trace and its format, not a dataset (the reader is the datasets'). */
function traceRows(path: string, format: TraceFormat): LocatedRecord[] {
  try {
    return textRecords(format === 'mooncake' ? 'jsonl' : 'csv', path);
  } catch (error) {
    if (!(error instanceof UserError)) throw error;
    const unreadable = error.message.startsWith('cannot read dataset ');
    const message = unreadable ? error.message.replace('cannot read dataset ', 'cannot read trace ') : error.message;
    throw new UserError(message, unreadable ? 'check the --trace path (in a file: prompts.path)' : HINT[format], error.exitCode);
  }
}

const COLUMNS: Record<Exclude<TraceFormat, 'mooncake'>, string[]> = {
  burstgpt: ['Timestamp', 'Request tokens', 'Response tokens'],
  azure: ['TIMESTAMP', 'ContextTokens', 'GeneratedTokens'],
};

function checkColumns(path: string, format: Exclude<TraceFormat, 'mooncake'>, first: LocatedRecord): void {
  const missing = COLUMNS[format].filter((column) => !(column in first.record));
  if (missing.length > 0)
    throw new UserError(
      `${path}:1: the header has no column ${missing.map((column) => `"${column}"`).join(', ')} (found ${Object.keys(first.record).join(',')})`,
      HINT[format],
    );
}

function traceRecord({ where, record }: LocatedRecord, format: TraceFormat): TraceRecord {
  const bad = (field: string, expected: string): never => {
    throw new UserError(`${where}: field "${field}" must be ${expected}, got ${JSON.stringify(record[field] ?? null)}`, HINT[format]);
  };
  const count = (field: string, min: 0 | 1): number => {
    const value = numberOf(record[field]);
    return value !== undefined && Number.isInteger(value) && value >= min ? value : bad(field, min === 1 ? 'a positive integer' : 'an integer >= 0');
  };
  switch (format) {
    case 'mooncake': {
      const timestampMs = numberOf(record.timestamp);
      if (timestampMs === undefined || timestampMs < 0) bad('timestamp', 'a time in ms >= 0');
      const hashIds = record.hash_ids;
      if (hashIds !== undefined && !(Array.isArray(hashIds) && hashIds.every((id) => Number.isInteger(id) && id >= 0)))
        bad('hash_ids', 'an array of block ids (integers >= 0)');
      return {
        where,
        timestampMs: timestampMs!,
        inputTokens: count('input_length', 1),
        outputTokens: count('output_length', 0),
        ...(hashIds !== undefined && { hashIds: hashIds as number[] }),
      };
    }
    case 'burstgpt': {
      const seconds = numberOf(record.Timestamp);
      if (seconds === undefined || seconds < 0) bad('Timestamp', 'a time in seconds >= 0');
      return { where, timestampMs: seconds! * 1000, inputTokens: count('Request tokens', 1), outputTokens: count('Response tokens', 0) };
    }
    case 'azure': {
      const timestampMs = typeof record.TIMESTAMP === 'string' ? dateTimeMs(record.TIMESTAMP) : undefined;
      if (timestampMs === undefined) bad('TIMESTAMP', 'a date-time like 2023-11-16 18:17:03.9799600');
      return { where, timestampMs: timestampMs!, inputTokens: count('ContextTokens', 1), outputTokens: count('GeneratedTokens', 0) };
    }
  }
}

/** A number, also from CSV text; undefined when it is not one. */
function numberOf(value: unknown): number | undefined {
  const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof number === 'number' && Number.isFinite(number) ? number : undefined;
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * ms since the epoch of `2023-11-16 18:17:03.9799600` (UTC unless an offset is given). Hand-parsed rather than by
 * Date: it keeps the sub-millisecond digits (arrivals 0.1 ms apart stay apart) and never reads local time.
 */
export function dateTimeMs(text: string): number | undefined {
  const match = DATE_TIME.exec(text.trim());
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return undefined;
  const fraction = match[7] ? Number(`0.${match[7]}`) * 1000 : 0;
  const zone = match[8];
  let offsetMs = 0;
  if (zone && zone !== 'Z') {
    const digits = zone.replace(':', '');
    offsetMs = (zone.startsWith('-') ? -1 : 1) * (Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5))) * 60_000;
  }
  return Date.UTC(year, month - 1, day, hour, minute, second) + fraction - offsetMs;
}
