import type { Db } from './db.js';

/** Blocks of a run claimed by a Slurm lane (table lane_claims): block → lane index. */
export function laneClaims(db: Db, runId: number): Map<number, number> {
  const rows = db.prepare('SELECT block, lane FROM lane_claims WHERE run_id = ?').all(runId) as Array<{ block: number; lane: number }>;
  return new Map(rows.map((row) => [row.block, row.lane]));
}

/** `lane` claims these blocks (taking over any of a lane that is gone); the caller holds the lane's fenced transaction. */
export function claimBlocks(db: Db, runId: number, lane: number, blocks: Iterable<number>): void {
  const upsert = db.prepare(
    `INSERT INTO lane_claims (run_id, block, lane, claimed_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (run_id, block) DO UPDATE SET lane = excluded.lane, claimed_at = excluded.claimed_at`,
  );
  const at = new Date().toISOString();
  for (const block of new Set(blocks)) upsert.run(runId, block, lane, at);
}
