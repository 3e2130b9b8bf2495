/**
 * Read-only views of the store for `servelab report` and `servelab ui`. Nothing here writes: the UI holds a
 * read-only connection while a runner writes through its own (WAL).
 */
import { existsSync } from 'node:fs';
import { UserError } from '../util/errors.js';
import { decodeFingerprint, decodeSampleLatencies } from './columns.js';
import { type Db, openStore } from './db.js';
import { leaseStaleMs } from './lease.js';
import { listRuns, type RunDetail } from './queries.js';
import { skipUnreadable, type UnreadableRow } from './row-json.js';
import type { FingerprintRecord, RunRecord } from './types.js';

/** A run without its (large) config, plan and verdicts, for lists. */
export interface RunSummary extends RunRecord {
  filePath: string;
  trialCount: number;
  plannedTrials?: number;
}

export interface ExperimentSummary {
  id: number;
  name: string;
  filePath: string;
  createdAt: string;
  runs: RunSummary[];
}

export interface ServerStatusRecord {
  id: number;
  runId: number;
  serverKey: string;
  label: string;
  host: string;
  status: 'starting' | 'ready' | 'failed' | 'stopped';
  phase: string;
  startedAt: string;
  updatedAt: string;
  readyMs?: number;
  predictedReadyMs?: number;
  logPath: string;
  message?: string;
}

export interface ProgressRecord {
  runId: number;
  /** The lane measuring it; absent without lanes. */
  lane?: string;
  trialLabel: string;
  completed: number;
  total: number;
  outputTokensPerSecond: number;
  updatedAt: string;
}

/** Successful requests' latencies of one trial. */
export interface TrialLatencies {
  ttftMs: number[];
  e2eMs: number[];
}

/**
 * Open an existing store read-only; readers never migrate or create it (a runner may be writing it). Every view
 * (ls, show, diff, report, ui) opens through here, so a missing store reads the same everywhere.
 */
export function openStoreForReading(path: string): Db {
  if (!existsSync(path)) throw new UserError(`no store at ${path}`, 'run an experiment first (`servelab run FILE`), or pass --store PATH');
  const db = openStore(path, { readonly: true });
  if ((db.pragma('user_version', { simple: true }) as number) < 2) {
    db.close();
    throw new UserError(`store ${path} has no experiment results yet`, 'run an experiment first (`servelab run FILE`), or pass --store PATH');
  }
  return db;
}

/** Experiments with their runs, newest first: the UI's navigation. */
export function listExperiments(db: Db): ExperimentSummary[] {
  const experiments = db.prepare('SELECT id, name, file_path, created_at FROM experiments ORDER BY id DESC').all() as Array<{
    id: number;
    name: string;
    file_path: string;
    created_at: string;
  }>;
  const runs = viewedRuns(db, listRuns(db));
  return experiments.map((experiment) => ({
    id: experiment.id,
    name: experiment.name,
    filePath: experiment.file_path,
    createdAt: experiment.created_at,
    runs: runs.filter((run) => run.experimentId === experiment.id).map(summarizeRun),
  }));
}

/**
 * Changes exactly when what a report of the run shows changes (a trial stored, status or verdicts written, its
 * runner gone), not on the frequent progress and server updates: lets the UI reuse a rendered report while a run is in flight.
 */
export function runContentKey(db: Db, runId: number): string | undefined {
  const row = db
    .prepare(
      `SELECT r.status, r.finished_at, r.message, length(r.verdict_json) AS verdicts,
         (SELECT count(*) FROM trials t WHERE t.run_id = r.id) AS trials, (SELECT max(id) FROM trials t WHERE t.run_id = r.id) AS last,
         (SELECT count(*) FROM invalid_trials i WHERE i.run_id = r.id) AS invalid
       FROM runs r WHERE r.id = ?`,
    )
    .get(runId);
  // A runner going quiet changes the status views derive (viewedRuns), not any row.
  return row === undefined ? undefined : JSON.stringify([row, staleRunningRuns(db).has(runId)]);
}

/** The most recent run, for `servelab report` without arguments. */
export function latestRunId(db: Db): number | undefined {
  const row = db.prepare('SELECT max(id) AS id FROM runs').get() as { id: number | null };
  return row.id ?? undefined;
}

/** Fingerprints by id; an unreadable one is left out (warned, added to `skipped`): views then show no environment for it. */
export function fingerprintsByIds(db: Db, ids: Iterable<number>, skipped?: UnreadableRow[]): Map<number, FingerprintRecord> {
  const unique = [...new Set(ids)];
  const result = new Map<number, FingerprintRecord>();
  if (unique.length === 0) return result;
  const rows = db.prepare(`SELECT id, hash, json FROM fingerprints WHERE id IN (${unique.map(() => '?').join(',')})`).all(...unique) as Array<{
    id: number;
    hash: string;
    json: string;
  }>;
  for (const record of skipUnreadable(rows, (row) => ({ id: row.id, hash: row.hash, fingerprint: decodeFingerprint(row.id, row.json) }), skipped))
    result.set(record.id, record);
  return result;
}

/** TTFT and end-to-end latencies of the successful requests of each trial; an unreadable row is left out, warned. */
export function trialLatencies(db: Db, trialIds: number[]): Map<number, TrialLatencies> {
  const result = new Map<number, TrialLatencies>(trialIds.map((id) => [id, { ttftMs: [], e2eMs: [] }]));
  const statement = db.prepare('SELECT rowid AS id, ttft_ms, e2e_ms FROM samples WHERE trial_id = ? AND error_kind IS NULL ORDER BY idx');
  for (const id of trialIds) {
    const latencies = result.get(id)!;
    const rows = statement.all(id) as Array<{ id: number; ttft_ms: unknown; e2e_ms: unknown }>;
    for (const row of skipUnreadable(rows, decodeSampleLatencies)) {
      if (row.ttft_ms !== null) latencies.ttftMs.push(row.ttft_ms);
      if (row.e2e_ms !== null) latencies.e2eMs.push(row.e2e_ms);
    }
  }
  return result;
}

export function runServers(db: Db, runId: number): ServerStatusRecord[] {
  const rows = db.prepare('SELECT * FROM servers WHERE run_id = ? ORDER BY id').all(runId) as Array<{
    id: number;
    run_id: number;
    server_key: string;
    label: string;
    host: string;
    status: ServerStatusRecord['status'];
    phase: string;
    started_at: string;
    updated_at: string;
    ready_ms: number | null;
    predicted_ready_ms: number | null;
    log_path: string;
    message: string | null;
  }>;
  return rows.map((row) => ({
    id: row.id,
    runId: row.run_id,
    serverKey: row.server_key,
    label: row.label,
    host: row.host,
    status: row.status,
    phase: row.phase,
    startedAt: row.started_at,
    updatedAt: row.updated_at,
    ...(row.ready_ms !== null && { readyMs: row.ready_ms }),
    ...(row.predicted_ready_ms !== null && { predictedReadyMs: row.predicted_ready_ms }),
    logPath: row.log_path,
    ...(row.message !== null && { message: row.message }),
  }));
}

/**
 * The run's own secret names (its experiment's `fingerprint.redact`), for what the store does not hold redacted: a
 * server's log file, where the server printed its own arguments. None when the config is unreadable.
 */
export function runRedactPatterns(db: Db, runId: number): string[] {
  const row = db.prepare("SELECT json_extract(config_json, '$.fingerprint.redact') AS redact FROM runs WHERE id = ?").get(runId) as
    | { redact: string | null }
    | undefined;
  try {
    const patterns: unknown = JSON.parse(row?.redact ?? '[]');
    return Array.isArray(patterns) ? patterns.filter((pattern): pattern is string => typeof pattern === 'string') : [];
  } catch {
    return [];
  }
}

export function getServer(db: Db, serverId: number): ServerStatusRecord | undefined {
  const row = db.prepare('SELECT run_id FROM servers WHERE id = ?').get(serverId) as { run_id: number } | undefined;
  return row && runServers(db, row.run_id).find((server) => server.id === serverId);
}

/** The trial in flight of each lane of a run (one row without lanes), in lane order. */
export function runProgress(db: Db, runId: number): ProgressRecord[] {
  const rows = db.prepare('SELECT * FROM progress WHERE run_id = ? ORDER BY lane').all(runId) as Array<{
    run_id: number;
    lane_name: string | null;
    trial_label: string;
    completed: number;
    total: number;
    output_tokens_per_second: number;
    updated_at: string;
  }>;
  return rows.map((row) => ({
    runId: row.run_id,
    ...(row.lane_name !== null && { lane: row.lane_name }),
    trialLabel: row.trial_label,
    completed: row.completed,
    total: row.total,
    outputTokensPerSecond: row.output_tokens_per_second,
    updatedAt: row.updated_at,
  }));
}

/**
 * A value that changes whenever another connection commits to the store. SQLite's data_version is exactly this
 * and costs nothing, unlike scanning max(updated_at) across tables.
 */
export function storeVersion(db: Db): number {
  return db.pragma('data_version', { simple: true }) as number;
}

/** The servers of runs still in flight: the log files the UI watches. */
export function liveServerLogs(db: Db): Array<{ id: number; logPath: string }> {
  return db.prepare("SELECT s.id, s.log_path AS logPath FROM servers s JOIN runs r ON r.id = s.run_id WHERE r.status = 'running'").all() as Array<{
    id: number;
    logPath: string;
  }>;
}

/** Runs in flight that have reported progress. */
export function runningRunsWithProgress(db: Db): number[] {
  const rows = db.prepare("SELECT DISTINCT p.run_id FROM progress p JOIN runs r ON r.id = p.run_id WHERE r.status = 'running'").all() as Array<{
    run_id: number;
  }>;
  return rows.map((row) => row.run_id);
}

function summarizeRun(run: RunDetail): RunSummary {
  const { config: _config, plan, verdicts: _verdicts, ...rest } = run;
  const planned = (plan as { trials?: unknown } | null)?.trials;
  return { ...rest, ...(Array.isArray(planned) && { plannedTrials: planned.length }) };
}

/**
 * Runs whose row says 'running' while their runner stopped sending heartbeats for longer than the lease's stale
 * period (killed, or its host gone): run id → last heartbeat. Runs without a lease row (a Slurm run whose jobs
 * are queued, a store from before leases) are not judged.
 */
export function staleRunningRuns(db: Db, nowMs = Date.now()): Map<number, string> {
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'run_leases'").get()) return new Map();
  const rows = db
    .prepare("SELECT r.id, max(l.heartbeat_at) AS last FROM runs r JOIN run_leases l ON l.run_id = r.id WHERE r.status = 'running' GROUP BY r.id")
    .all() as Array<{ id: number; last: string }>;
  return new Map(rows.filter((row) => nowMs - Date.parse(row.last) > leaseStaleMs()).map((row) => [row.id, row.last]));
}

/**
 * Runs as views show them: one whose runner is gone is 'interrupted' with a hint to resume. Derived at read time,
 * never written: the next runner, not a reader, decides what happened to the run.
 */
export function viewedRuns<T extends RunRecord>(db: Db, runs: readonly T[]): T[] {
  const stale = staleRunningRuns(db);
  return runs.map((run) => {
    const last = stale.get(run.id);
    if (last === undefined) return run;
    return { ...run, status: 'interrupted', message: `runner gone (no heartbeat since ${last}); resume: \`servelab run --resume ${run.id}\`` };
  });
}
