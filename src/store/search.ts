/** A search's decisions, one per block (table search_steps): what a resumed run replays and every view reads. */
import { z } from 'zod';
import type { Db } from './db.js';
import { decodeColumn } from './row-json.js';

/** A point's standing in one race when a step decided about it (search/types.ts RaceFigures). */
const raceFiguresSchema = z.object({
  level: z.string(),
  status: z.enum(['leader', 'racing', 'as good', 'not better', 'out']),
  versus: z.string().optional(),
  estimate: z.number().optional(),
  lower: z.number().optional(),
  upper: z.number().optional(),
  blocks: z.number().optional(),
});

/** Steps stored before the figures were data have no `races` nor `open`: views read those from the reasons' words. */
const storedStepSchema = z.object({
  /** Point keys to measure in this block (each at every workload), in run order. */
  measure: z.array(z.string()),
  drop: z.array(z.object({ point: z.string(), reason: z.string(), status: z.string().optional(), races: z.array(raceFiguresSchema).optional() })),
  leaders: z.array(z.object({ level: z.string(), point: z.string(), value: z.number(), margin: z.number().optional(), preferred: z.string().optional() })),
  done: z
    .object({
      reason: z.string(),
      resolved: z.boolean(),
      unresolved: z.array(z.string()),
      open: z.array(z.object({ point: z.string(), races: z.array(raceFiguresSchema) })).optional(),
    })
    .optional(),
});

/** The step decided before `block` ran (block 0: the opening design), with the cost spent when it was decided. */
export interface StoredSearchStep extends z.output<typeof storedStepSchema> {
  block: number;
  /** Cost spent before the step, in GPU-seconds. */
  spentSeconds: number;
  createdAt: string;
}

/** Record a step; a resumed run deciding the same block again keeps the first (the one its trials followed). */
export function recordSearchStep(db: Db, runId: number, step: Omit<StoredSearchStep, 'createdAt'>): void {
  const { block, spentSeconds, ...decision } = step;
  db.prepare('INSERT OR IGNORE INTO search_steps (run_id, block, step_json, spent_s, created_at) VALUES (?, ?, ?, ?, ?)').run(
    runId,
    block,
    JSON.stringify(decision),
    spentSeconds,
    new Date().toISOString(),
  );
}

/** Oldest first; none from a store written before the table existed (read-only views do not migrate). */
export function listSearchSteps(db: Db, runId: number): StoredSearchStep[] {
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'search_steps'").get()) return [];
  const rows = db.prepare('SELECT id, block, step_json, spent_s, created_at FROM search_steps WHERE run_id = ? ORDER BY block').all(runId) as Array<{
    id: number;
    block: number;
    step_json: string;
    spent_s: number;
    created_at: string;
  }>;
  return rows.map((row) => ({
    ...decodeColumn({ table: 'search_steps', rowId: row.id, column: 'step_json' }, storedStepSchema, row.step_json),
    block: row.block,
    spentSeconds: row.spent_s,
    createdAt: row.created_at,
  }));
}
