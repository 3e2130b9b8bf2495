/** Drift alarms as rows: what `show` and the report list instead of re-parsing the run's message. */
import type { FingerprintChange } from '../fingerprint/types.js';
import { redactor } from '../util/redact.js';
import { decodeAlarmChanges, decodeAlarmMachine } from './columns.js';
import type { Db } from './db.js';
import { skipUnreadable, type UnreadableRow } from './row-json.js';

export interface DriftAlarmRecord {
  variant: string;
  workload: string;
  metric: string;
  current: number;
  reference: number;
  changePct: number;
  /** Half-width of the noise band, in percent. */
  bandPct: number;
  /** diffFingerprints(recorded, current). */
  changes: FingerprintChange[];
  /** Machine-state differences from the reference trials; may be empty. */
  machine: string[];
  /** --accept-drift let the run continue past it. */
  accepted: boolean;
  message: string;
  raisedAt: string;
}

interface DriftAlarmRow {
  id: number;
  variant: string;
  workload: string;
  metric: string;
  current: number;
  reference: number;
  change_pct: number;
  band_pct: number;
  changes_json: string;
  machine_json: string;
  accepted: number;
  message: string;
  raised_at: string;
}

export function insertDriftAlarm(db: Db, runId: number, alarm: Omit<DriftAlarmRecord, 'raisedAt'>): void {
  const clean = redactor();
  db.prepare(
    `INSERT INTO drift_alarms (run_id, variant, workload, metric, current, reference, change_pct, band_pct, changes_json, machine_json, accepted, message, raised_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    runId,
    alarm.variant,
    alarm.workload,
    alarm.metric,
    alarm.current,
    alarm.reference,
    alarm.changePct,
    alarm.bandPct,
    JSON.stringify(clean.deep(alarm.changes)),
    JSON.stringify(clean.deep(alarm.machine)),
    alarm.accepted ? 1 : 0,
    clean.text(alarm.message),
    new Date().toISOString(),
  );
}

/**
 * Oldest first; none from a store written before alarms were rows (read-only views do not migrate). An alarm whose
 * detail lists cannot be read is still listed (its message is a plain column), without that detail, with a warning.
 */
export function listDriftAlarms(db: Db, runId: number, skipped?: UnreadableRow[]): DriftAlarmRecord[] {
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'drift_alarms'").get()) return [];
  const rows = db.prepare('SELECT * FROM drift_alarms WHERE run_id = ? ORDER BY id').all(runId) as DriftAlarmRow[];
  return rows.map((row) => ({
    variant: row.variant,
    workload: row.workload,
    metric: row.metric,
    current: row.current,
    reference: row.reference,
    changePct: row.change_pct,
    bandPct: row.band_pct,
    changes: (skipUnreadable([row], (found) => decodeAlarmChanges(found.id, found.changes_json), skipped)[0] ?? []) as FingerprintChange[],
    machine: skipUnreadable([row], (found) => decodeAlarmMachine(found.id, found.machine_json), skipped)[0] ?? [],
    accepted: row.accepted === 1,
    message: row.message,
    raisedAt: row.raised_at,
  }));
}
