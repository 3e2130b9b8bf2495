/**
 * The one way a stored JSON column (and, through `decodeScalars`, a row's numbers) is read. A value that is not
 * JSON, not in the shape the code expects, or stamped by a newer servelab is an UnreadableRowError naming the table,
 * the row id and the column: never a SyntaxError from deep inside a view, never a field read as undefined or text and
 * turned into a wrong number. Readers that can go on without the row (lists, reports, drift history, exports) skip it
 * through `skipUnreadable`, which warns once per row.
 */
import type { z } from 'zod';
import { UserError } from '../util/errors.js';

/** Where a stored value lives. */
export interface RowRef {
  table: string;
  rowId: number;
  column: string;
}

/** A stored value that could not be read, and why. */
export interface UnreadableRow extends RowRef {
  cause: string;
}

export class UnreadableRowError extends UserError {
  constructor(
    readonly row: UnreadableRow,
    what?: string,
  ) {
    super(
      `${what ? `${what} (${describeRow(row)})` : describeRow(row)} is not in a shape servelab reads (${row.cause})`,
      'the store row was altered or written by another tool; start a new run, or delete that row',
    );
    this.name = 'UnreadableRowError';
  }
}

/** "trials row 12, column metrics_json". */
export function describeRow(row: RowRef): string {
  return `${row.table} row ${row.rowId}, column ${row.column}`;
}

/** "trials row 12, column metrics_json: not valid JSON". */
export function describeUnreadable(row: UnreadableRow): string {
  return `${describeRow(row)}: ${row.cause}`;
}

/**
 * Parse and check one stored value. Objects may carry `schemaVersion` (absent: version 0, the shape before stamps);
 * one newer than `version` was written by a newer servelab and is refused rather than guessed at. Returns the value
 * as stored (zod's copy reorders keys; the schemas here transform nothing).
 */
export function decodeColumn<T>(ref: RowRef, schema: z.ZodType<T>, text: string | null, options: { version?: number; what?: string } = {}): T {
  const fail = (cause: string): UnreadableRowError => new UnreadableRowError({ ...ref, cause }, options.what);
  if (text === null) throw fail('no value');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw fail('not valid JSON');
  }
  const stamped = (value as { schemaVersion?: unknown } | null)?.schemaVersion;
  const known = options.version ?? 0;
  if (typeof stamped === 'number' && stamped > known) {
    throw new UserError(
      `${options.what ? `${options.what} (${describeRow(ref)})` : describeRow(ref)} has format version ${stamped}, newer than this servelab reads (${known})`,
      'read this store with the servelab version that wrote it, or a newer one',
    );
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw fail(`${issue.path.join('.') || 'value'}: ${issue.message}`);
  }
  return value as T;
}

/**
 * Check the scalar columns of one row (SQLite keeps whatever was written, whatever the column's declared type: an
 * INTEGER column holds 'abc' as text): the first column not in `schema`'s shape is an UnreadableRowError naming it.
 */
export function decodeScalars<T>(ref: Omit<RowRef, 'column'>, schema: z.ZodType<T>, row: unknown): T {
  const result = schema.safeParse(row);
  if (result.success) return row as T;
  const issue = result.error.issues[0]!;
  const column = String(issue.path[0] ?? 'row');
  const stored = (row as Record<string, unknown> | null)?.[column];
  throw new UnreadableRowError({ ...ref, column, cause: `${issue.message}${stored === undefined ? '' : `, stored ${JSON.stringify(stored)?.slice(0, 40)}`}` });
}

/** Rows already named on stderr in this process: a view polled every second warns once, not every second. */
const warned = new Set<string>();

/**
 * Decode each row; a row that cannot be read is left out, named once on stderr and added to `skipped` when given
 * (views list them). Any other error (a newer format, SQLite) still throws.
 */
export function skipUnreadable<R, T>(rows: readonly R[], decode: (row: R) => T, skipped?: UnreadableRow[]): T[] {
  const result: T[] = [];
  for (const row of rows) {
    try {
      result.push(decode(row));
    } catch (error) {
      if (!(error instanceof UnreadableRowError)) throw error;
      noteUnreadable(error.row, skipped);
    }
  }
  return result;
}

/** Warn about a row left out (once per process) and record it for the caller's view. */
export function noteUnreadable(row: UnreadableRow, skipped?: UnreadableRow[]): void {
  skipped?.push(row);
  const text = describeUnreadable(row);
  if (warned.has(text)) return;
  warned.add(text);
  process.stderr.write(`warning: left out ${text}\n`);
}
