import type { Db } from './db.js';

/** Store reads a campaign plan is costed from: how long servers took to start and trials took to run. */

/** Time to ready of the most recent successful startups of a config (newest first). */
export function recentReadyMs(db: Db, configKey: string, limit = 5): number[] {
  const rows = db
    .prepare("SELECT ready_ms FROM startups WHERE config_key = ? AND outcome = 'ready' AND ready_ms IS NOT NULL ORDER BY id DESC LIMIT ?")
    .all(configKey, limit) as Array<{ ready_ms: number }>;
  return rows.map((row) => row.ready_ms);
}

/** Wall time (ms) of recorded trials of an experiment, newest first, optionally of one variant, for one workload. */
export function recentTrialDurationsMs(db: Db, query: { experimentName: string; workload: string; variant?: string; limit?: number }): number[] {
  const rows = db
    .prepare(
      `SELECT t.started_at, t.finished_at FROM trials t JOIN runs r ON r.id = t.run_id JOIN experiments e ON e.id = r.experiment_id
       WHERE e.name = ? AND t.workload = ? AND (? IS NULL OR t.variant = ?) ORDER BY t.id DESC LIMIT ?`,
    )
    .all(query.experimentName, query.workload, query.variant ?? null, query.variant ?? null, query.limit ?? 20) as Array<{ started_at: string; finished_at: string }>;
  return rows.map((row) => Date.parse(row.finished_at) - Date.parse(row.started_at)).filter((ms) => Number.isFinite(ms) && ms >= 0);
}
