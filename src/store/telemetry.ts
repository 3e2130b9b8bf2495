import type { TelemetrySummary, TrialTelemetry } from '../telemetry/types.js';
import type { Db } from './db.js';

/** Reads of per-trial machine telemetry (written by insertTrial). Trials measured before it existed have none. */

interface TelemetryRow {
  trial_id: number;
  summary_json: string;
  series_json: string;
  server_metrics_json: string;
  started_at_ms: number;
}

/** Summaries only: cheap enough for drift attribution over a long history. */
export function telemetrySummaries(db: Db, trialIds: readonly number[]): Map<number, TelemetrySummary> {
  const select = db.prepare('SELECT trial_id, summary_json FROM trial_telemetry WHERE trial_id = ?');
  const summaries = new Map<number, TelemetrySummary>();
  for (const id of trialIds) {
    const row = select.get(id) as Pick<TelemetryRow, 'trial_id' | 'summary_json'> | undefined;
    if (row) summaries.set(id, JSON.parse(row.summary_json) as TelemetrySummary);
  }
  return summaries;
}

/** Everything recorded for each trial of a run that has telemetry, keyed by trial id. */
export function runTelemetry(db: Db, runId: number): Map<number, TrialTelemetry> {
  const rows = db
    .prepare('SELECT tt.* FROM trial_telemetry tt JOIN trials t ON t.id = tt.trial_id WHERE t.run_id = ? ORDER BY t.id')
    .all(runId) as TelemetryRow[];
  return new Map(
    rows.map((row) => [
      row.trial_id,
      {
        startedAt: row.started_at_ms,
        summary: JSON.parse(row.summary_json),
        series: JSON.parse(row.series_json),
        serverMetrics: JSON.parse(row.server_metrics_json),
      } as TrialTelemetry,
    ]),
  );
}
