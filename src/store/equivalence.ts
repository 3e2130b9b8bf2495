/** Stored passes of quality.equivalence (table equivalence_outputs). */
import type { RequestOutput } from '../metrics/types.js';
import { decodeEquivalenceOutputs, encodeEquivalenceOutputs } from './columns.js';
import type { Db } from './db.js';
import { skipUnreadable, type UnreadableRow } from './row-json.js';

/** The same prompts sent once to one variant on one server start, at one concurrency. */
export interface EquivalencePass {
  variant: string;
  /** The servers row of the start it was sent to: passes of different starts are compared for the A/A floor. */
  serverId: number;
  concurrency: number;
  startedAt: string;
  outputs: RequestOutput[];
}

interface EquivalenceRow {
  id: number;
  variant: string;
  server_id: number;
  concurrency: number;
  started_at: string;
  outputs_json: string;
}

export function insertEquivalencePass(db: Db, runId: number, pass: EquivalencePass): void {
  db.prepare('INSERT INTO equivalence_outputs (run_id, variant, server_id, concurrency, started_at, outputs_json) VALUES (?, ?, ?, ?, ?, ?)').run(
    runId,
    pass.variant,
    pass.serverId,
    pass.concurrency,
    pass.startedAt,
    encodeEquivalenceOutputs(pass.outputs),
  );
}

/** Oldest first; none from a store written before the table existed (read-only views do not migrate). */
export function listEquivalencePasses(db: Db, runId: number, skipped?: UnreadableRow[]): EquivalencePass[] {
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'equivalence_outputs'").get()) return [];
  const rows = db.prepare('SELECT * FROM equivalence_outputs WHERE run_id = ? ORDER BY id').all(runId) as EquivalenceRow[];
  return skipUnreadable(
    rows,
    (row) => ({
      variant: row.variant,
      serverId: row.server_id,
      concurrency: row.concurrency,
      startedAt: row.started_at,
      outputs: decodeEquivalenceOutputs(row.id, row.outputs_json),
    }),
    skipped,
  );
}
