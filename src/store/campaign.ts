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
    .all(query.experimentName, query.workload, query.variant ?? null, query.variant ?? null, query.limit ?? 20) as Array<{
    started_at: string;
    finished_at: string;
  }>;
  return rows.map((row) => Date.parse(row.finished_at) - Date.parse(row.started_at)).filter((ms) => Number.isFinite(ms) && ms >= 0);
}

export interface RaceEvent {
  afterPass: number;
  kind: 'eliminated' | 'stop';
  variant?: string;
  reason: string;
}

/** Record a race decision; a resumed run repeating one is ignored (one elimination per config, one stop per run). */
export function recordRaceEvent(db: Db, runId: number, event: RaceEvent): void {
  db.prepare('INSERT OR IGNORE INTO race_events (run_id, after_pass, kind, variant, reason, created_at) VALUES (?, ?, ?, ?, ?, ?)').run(
    runId,
    event.afterPass,
    event.kind,
    event.variant ?? null,
    event.reason,
    new Date().toISOString(),
  );
}

export function listRaceEvents(db: Db, runId: number): RaceEvent[] {
  const rows = db.prepare('SELECT after_pass, kind, variant, reason FROM race_events WHERE run_id = ? ORDER BY id').all(runId) as Array<{
    after_pass: number;
    kind: 'eliminated' | 'stop';
    variant: string | null;
    reason: string;
  }>;
  return rows.map((row) => ({ afterPass: row.after_pass, kind: row.kind, ...(row.variant !== null && { variant: row.variant }), reason: row.reason }));
}
