import type { TelemetrySummary, TrialTelemetry } from '../telemetry/types.js';
import { decodeServerMetrics, decodeTelemetrySeries, decodeTelemetrySummary } from './columns.js';
import type { Db } from './db.js';
import { skipUnreadable, type UnreadableRow } from './row-json.js';

/**
 * Reads of per-trial machine telemetry (written by insertTrial). Trials measured before it existed have none; a
 * row that cannot be read is left out with a warning, as if none had been recorded.
 */

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
    const summary = row && skipUnreadable([row], (found) => decodeTelemetrySummary(found.trial_id, found.summary_json))[0];
    if (summary) summaries.set(id, summary);
  }
  return summaries;
}

/** Everything recorded for each trial of a run that has telemetry, keyed by trial id. */
export function runTelemetry(db: Db, runId: number, skipped?: UnreadableRow[]): Map<number, TrialTelemetry> {
  const rows = db
    .prepare('SELECT tt.* FROM trial_telemetry tt JOIN trials t ON t.id = tt.trial_id WHERE t.run_id = ? ORDER BY t.id')
    .all(runId) as TelemetryRow[];
  return new Map(
    skipUnreadable(
      rows,
      (row): [number, TrialTelemetry] => [
        row.trial_id,
        {
          startedAt: row.started_at_ms,
          summary: decodeTelemetrySummary(row.trial_id, row.summary_json),
          series: decodeTelemetrySeries(row.trial_id, row.series_json),
          serverMetrics: decodeServerMetrics(row.trial_id, row.server_metrics_json),
        },
      ],
      skipped,
    ),
  );
}
