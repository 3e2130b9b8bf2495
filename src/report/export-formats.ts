/**
 * An export table as CSV (RFC 4180), JSON Lines or Parquet. Numbers are written as JavaScript prints them (the
 * shortest text that reads back as the same double); a value not measured is an empty CSV field, JSON null, or a
 * Parquet null — never 0 or NaN.
 */
import type { Cell, ColumnKind, ExportTable } from './export-table.js';

export const TABLE_FORMATS = ['csv', 'jsonl', 'parquet'] as const;
export type TableFormat = (typeof TABLE_FORMATS)[number];

export function tableCsv(table: ExportTable): string {
  const lines = [table.columns.map((column) => csvField(column.name)), ...table.rows.map((row) => row.map((cell) => csvField(csvText(cell))))];
  return lines.map((fields) => `${fields.join(',')}\r\n`).join('');
}

/** One JSON object per row, every column present. */
export function tableJsonl(table: ExportTable): string {
  return table.rows.map((row) => `${JSON.stringify(Object.fromEntries(table.columns.map((column, index) => [column.name, row[index]])))}\n`).join('');
}

const PARQUET_TYPES: Record<ColumnKind, 'STRING' | 'INT32' | 'DOUBLE' | 'JSON'> = { string: 'STRING', integer: 'INT32', number: 'DOUBLE', json: 'JSON' };

/** Typed, nullable columns; counts and ids as INT32 (every reader gets plain numbers, not BigInts). */
export async function tableParquet(table: ExportTable): Promise<Uint8Array> {
  // Loaded only for Parquet: the writer is not needed by any other command.
  const { parquetWriteBuffer } = await import('hyparquet-writer');
  const buffer = parquetWriteBuffer({
    columnData: table.columns.map((column, index) => ({
      name: column.name,
      data: table.rows.map((row) => row[index] ?? null),
      type: PARQUET_TYPES[column.kind],
      nullable: true,
    })),
    createdBy: 'servelab export',
  });
  return new Uint8Array(buffer);
}

function csvText(cell: Cell): string {
  if (cell === null) return '';
  if (Array.isArray(cell)) return JSON.stringify(cell);
  return String(cell);
}

function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}
