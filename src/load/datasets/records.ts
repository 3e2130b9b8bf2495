import { readFileSync } from 'node:fs';
import { parse as parseCsv } from 'csv-parse/sync';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { messageOf, UserError } from '../../util/errors.js';
import type { DatasetFormat } from './types.js';

/** One dataset record and where it is, for error messages ("file:12", "file row 7"). */
export interface LocatedRecord {
  where: string;
  record: Record<string, unknown>;
}

export function readDatasetText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(`cannot read dataset ${path}: ${messageOf(error)}`, 'check the --dataset path');
  }
}

function asObject(value: unknown, where: string, format: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UserError(`${where}: record is not a JSON object`, `each ${format} record must be one object like {"prompt": "...", "max_tokens": 128}`);
  }
  return value as Record<string, unknown>;
}

/** JSONL: one JSON object per line; blank lines are skipped. */
function jsonlRecords(path: string): LocatedRecord[] {
  const records: LocatedRecord[] = [];
  readDatasetText(path)
    .split('\n')
    .forEach((raw, index) => {
      const line = raw.trim();
      if (line === '') return;
      const where = `${path}:${index + 1}`;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (error) {
        throw new UserError(`${where}: not valid JSON: ${messageOf(error)}`, 'each line must be one JSON object like {"prompt": "...", "max_tokens": 128}');
      }
      records.push({ where, record: asObject(value, where, 'JSONL') });
    });
  return records;
}

/** CSV with a header row; `where` is the line the record ends on (a quoted field may span lines). */
function csvRecords(path: string): LocatedRecord[] {
  let rows: Array<{ record: Record<string, string>; info: { lines: number } }>;
  try {
    rows = parseCsv(readDatasetText(path), { columns: true, skip_empty_lines: true, bom: true, info: true, relax_column_count: false });
  } catch (error) {
    const line = (error as { lines?: unknown }).lines;
    throw new UserError(
      `${path}${typeof line === 'number' ? `:${line}` : ''}: not valid CSV: ${messageOf(error)}`,
      'give a CSV file with a header row and the same number of columns on every row',
    );
  }
  return rows.map(({ record, info }) => ({ where: `${path}:${info.lines}`, record }));
}

async function parquetRecords(path: string): Promise<LocatedRecord[]> {
  let rows: Array<Record<string, unknown>>;
  try {
    rows = await parquetReadObjects({ file: await asyncBufferFromFile(path) });
  } catch (error) {
    throw new UserError(`cannot read Parquet dataset ${path}: ${messageOf(error)}`, 'check the --dataset path and that it is a Parquet file');
  }
  return rows.map((record, index) => ({ where: `${path} row ${index + 1}`, record }));
}

/** Records of a JSONL, CSV or Parquet file (ShareGPT has its own reader: it nests conversations). */
export async function tableRecords(format: Exclude<DatasetFormat, 'sharegpt'>, path: string): Promise<LocatedRecord[]> {
  return format === 'parquet' ? parquetRecords(path) : textRecords(format, path);
}

/** Records of a JSONL or CSV file, read at once (an experiment file's sample set is checked as the file loads). */
export function textRecords(format: 'jsonl' | 'csv', path: string): LocatedRecord[] {
  return format === 'jsonl' ? jsonlRecords(path) : csvRecords(path);
}
