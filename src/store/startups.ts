import { decodePhases } from './columns.js';
import type { Db } from './db.js';
import { skipUnreadable } from './row-json.js';
import type { StartupRecord } from './types.js';

interface StartupRow {
  id: number;
  config_key: string;
  started_at: string;
  ready_ms: number | null;
  outcome: 'ready' | 'failed';
  phases_json: string;
  run_id: number | null;
}

export function recordStartup(db: Db, startup: Omit<StartupRecord, 'id'>): number {
  const result = db
    .prepare('INSERT INTO startups (config_key, started_at, ready_ms, outcome, phases_json, run_id) VALUES (?, ?, ?, ?, ?, ?)')
    .run(startup.configKey, startup.startedAt, startup.readyMs ?? null, startup.outcome, JSON.stringify(startup.phases), startup.runId ?? null);
  return Number(result.lastInsertRowid);
}

/** The most recent successful startup of a config, used to predict time to ready. */
export function lastReadyStartup(db: Db, configKey: string): StartupRecord | undefined {
  const row = db.prepare("SELECT * FROM startups WHERE config_key = ? AND outcome = 'ready' ORDER BY id DESC LIMIT 1").get(configKey) as StartupRow | undefined;
  // An unreadable row only costs the prediction (warned), never the wait.
  return row && skipUnreadable([row], fromRow)[0];
}

function fromRow(row: StartupRow): StartupRecord {
  return {
    id: row.id,
    configKey: row.config_key,
    startedAt: row.started_at,
    ...(row.ready_ms !== null && { readyMs: row.ready_ms }),
    outcome: row.outcome,
    phases: decodePhases(row.id, row.phases_json),
    ...(row.run_id !== null && { runId: row.run_id }),
  };
}
