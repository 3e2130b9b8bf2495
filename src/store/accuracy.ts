/** Stored passes of quality.accuracy (table accuracy_items): one row per item a variant answered on one server start. */
import type { Db } from './db.js';

/** One scored answer. */
export interface AccuracyItem {
  /** Position of the record in the sample set (0-based, file order). */
  item: number;
  category?: string;
  correct: boolean;
  /** What the scorer read from the answer (a number, a letter, the match); undefined when it found nothing. */
  extracted?: string;
}

/** The sample set answered once by one variant on one server start. */
export interface AccuracyPass {
  variant: string;
  /** The servers row of the start it was sent to. */
  serverId: number;
  startedAt: string;
  items: AccuracyItem[];
}

interface AccuracyRow {
  variant: string;
  server_id: number;
  started_at: string;
  item: number;
  category: string | null;
  correct: number;
  extracted: string | null;
}

export function insertAccuracyPass(db: Db, runId: number, pass: AccuracyPass): void {
  const insert = db.prepare(
    'INSERT INTO accuracy_items (run_id, variant, server_id, started_at, item, category, correct, extracted) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  for (const item of pass.items) {
    insert.run(runId, pass.variant, pass.serverId, pass.startedAt, item.item, item.category ?? null, item.correct ? 1 : 0, item.extracted ?? null);
  }
}

/** Passes in the order they were stored; none from a store written before the table existed (read-only views do not migrate). */
export function listAccuracyPasses(db: Db, runId: number): AccuracyPass[] {
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'accuracy_items'").get()) return [];
  const rows = db.prepare('SELECT * FROM accuracy_items WHERE run_id = ? ORDER BY id').all(runId) as AccuracyRow[];
  const passes = new Map<string, AccuracyPass>();
  for (const row of rows) {
    const key = `${row.variant}\u0000${row.server_id}\u0000${row.started_at}`;
    let pass = passes.get(key);
    if (!pass) {
      pass = { variant: row.variant, serverId: row.server_id, startedAt: row.started_at, items: [] };
      passes.set(key, pass);
    }
    pass.items.push({
      item: row.item,
      ...(row.category !== null && { category: row.category }),
      correct: row.correct === 1,
      ...(row.extracted !== null && { extracted: row.extracted }),
    });
  }
  return [...passes.values()];
}
