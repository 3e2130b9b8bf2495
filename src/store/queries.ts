import type { Fingerprint } from '../fingerprint/types.js';
import type { RequestSample } from '../metrics/types.js';
import { pairKey } from '../util/trial-keys.js';
import { decodeFingerprint, decodeItl, decodeSampleScalars, decodeTrialMetrics, decodeTrialParams, decodeTrialScalars } from './columns.js';
import type { Db } from './db.js';
import { noteUnreadable, skipUnreadable, type UnreadableRow, UnreadableRowError } from './row-json.js';
import { decodeExperiment, decodePlan, decodeVerdicts, type StoredExperiment, type StoredPlan, type StoredVerdicts } from './run-json.js';
import type { RunRecord, RunStatus, TrialRecord } from './types.js';

/** Reads of runs, trials and fingerprints for the runner (resume, drift history) and the terminal views. */

interface RunRow {
  id: number;
  experiment_id: number;
  experiment_name: string;
  file_path: string;
  started_at: string;
  finished_at: string | null;
  status: RunStatus;
  message: string | null;
  servelab_version: string;
  git_sha: string | null;
  config_json: string;
  plan_json: string;
  verdict_json: string | null;
  trial_count: number;
}

export interface RunDetail extends RunRecord {
  filePath: string;
  /** The ResolvedExperiment, Plan and verdicts as stored, checked by ./run-json.ts. */
  config: StoredExperiment;
  plan: StoredPlan;
  verdicts?: StoredVerdicts;
  trialCount: number;
}

const RUN_SELECT = `
  SELECT r.*, e.name AS experiment_name, e.file_path, (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.id) AS trial_count
  FROM runs r JOIN experiments e ON e.id = r.experiment_id`;

function runFromRow(row: RunRow): RunDetail {
  return {
    id: row.id,
    experimentId: row.experiment_id,
    experimentName: row.experiment_name,
    filePath: row.file_path,
    startedAt: row.started_at,
    ...(row.finished_at !== null && { finishedAt: row.finished_at }),
    status: row.status,
    ...(row.message !== null && { message: row.message }),
    servelabVersion: row.servelab_version,
    ...(row.git_sha !== null && { gitSha: row.git_sha }),
    config: decodeExperiment(row.id, row.config_json),
    plan: decodePlan(row.id, row.plan_json),
    ...storedVerdicts(row),
    trialCount: row.trial_count,
  };
}

/** Unreadable stored verdicts are left out (with a warning): views then compute them from the trials. */
function storedVerdicts(row: RunRow): { verdicts?: StoredVerdicts } {
  if (!row.verdict_json) return {};
  try {
    return { verdicts: decodeVerdicts(row.id, row.verdict_json) };
  } catch (error) {
    if (!(error instanceof UnreadableRowError)) throw error;
    noteUnreadable(error.row);
    return {};
  }
}

/** Newest first; a run whose experiment or plan cannot be read is left out with a warning (and added to `skipped`). */
export function listRuns(db: Db, options: { experimentName?: string; limit?: number } = {}, skipped?: UnreadableRow[]): RunDetail[] {
  const where = options.experimentName === undefined ? '' : 'WHERE e.name = @name';
  const rows = db
    .prepare(`${RUN_SELECT} ${where} ORDER BY r.id DESC LIMIT @limit`)
    .all({ ...(options.experimentName !== undefined && { name: options.experimentName }), limit: options.limit ?? -1 }) as RunRow[];
  return skipUnreadable(rows, runFromRow, skipped);
}

/** The run; an UnreadableRowError (a UserError naming the row) when its experiment or plan cannot be read. */
export function getRun(db: Db, runId: number): RunDetail | undefined {
  const row = db.prepare(`${RUN_SELECT} WHERE r.id = ?`).get(runId) as RunRow | undefined;
  return row && runFromRow(row);
}

/** The newest run of an experiment that did not finish ('running' after a crash, 'interrupted', 'failed', 'drift'). */
export function latestUnfinishedRun(db: Db, experimentName: string): RunDetail | undefined {
  const row = db.prepare(`${RUN_SELECT} WHERE e.name = ? AND r.status != 'done' ORDER BY r.id DESC LIMIT 1`).get(experimentName) as RunRow | undefined;
  return row && runFromRow(row);
}

interface TrialRow {
  id: number;
  run_id: number;
  variant: string;
  server_key: string;
  workload: string;
  concurrency: number | null;
  params_json: string;
  block: number;
  repetition: number;
  started_at: string;
  finished_at: string;
  metrics_json: string;
  cache: string | null;
  lane: number | null;
  fingerprint_id: number;
}

function trialFromRow(stored: TrialRow): TrialRecord {
  const row = decodeTrialScalars(stored);
  return {
    id: row.id,
    runId: row.run_id,
    variant: row.variant,
    serverKey: row.server_key,
    workload: row.workload,
    ...(row.concurrency !== null && { concurrency: row.concurrency }),
    params: decodeTrialParams(row.id, row.params_json),
    block: row.block,
    repetition: row.repetition,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    metrics: decodeTrialMetrics(row.id, row.metrics_json),
    ...(row.cache !== null && { cache: row.cache }),
    ...(row.lane !== null && row.lane !== undefined && { lane: row.lane }),
    fingerprintId: row.fingerprint_id,
  };
}

/**
 * Trials of a run in the order they finished. A trial whose stored figures cannot be read is left out of every
 * use (verdicts, drift, views) with a warning naming its row, and added to `skipped` for views that list them.
 */
export function listTrials(db: Db, runId: number, skipped?: UnreadableRow[]): TrialRecord[] {
  return skipUnreadable(db.prepare('SELECT * FROM trials WHERE run_id = ? ORDER BY id').all(runId) as TrialRow[], trialFromRow, skipped);
}

/**
 * Earlier trials of the same experiment name + variant + workload, newest first: the history a drift alarm compares
 * with. Only finished runs count (status 'done'): never the running run, a concurrent one, or one that failed or
 * was stopped by a drift alarm (its numbers are the suspect ones) unless the user accepted it. Invalid trials live
 * in their own table and never appear here.
 */
export function variantHistory(
  db: Db,
  query: { experimentName: string; variant: string; workload: string; excludeRunId: number; limit?: number },
): TrialRecord[] {
  const rows = db
    .prepare(
      `SELECT t.* FROM trials t JOIN runs r ON r.id = t.run_id JOIN experiments e ON e.id = r.experiment_id
       WHERE e.name = ? AND t.variant = ? AND t.workload = ? AND t.run_id != ? AND r.status = 'done'
       ORDER BY t.id DESC LIMIT ?`,
    )
    .all(query.experimentName, query.variant, query.workload, query.excludeRunId, query.limit ?? 50) as TrialRow[];
  // An unreadable row of an earlier run must not stop this one: it is left out of the history, with a warning.
  return skipUnreadable(rows, trialFromRow);
}

/** Undefined when absent or unreadable (warned): a fingerprint only explains a number, it never is one. */
export function getFingerprint(db: Db, fingerprintId: number): Fingerprint | undefined {
  const row = db.prepare('SELECT json FROM fingerprints WHERE id = ?').get(fingerprintId) as { json: string } | undefined;
  return row && skipUnreadable([row], (found) => decodeFingerprint(fingerprintId, found.json))[0];
}

interface SampleRow {
  id: number;
  idx: number;
  sent_at_ms: number;
  input_tokens: number;
  output_tokens: number;
  ttft_ms: number | null;
  tpot_ms: number | null;
  e2e_ms: number | null;
  itl_json: string;
  error_kind: string | null;
  error_message: string | null;
  // Since schema version 12; absent in a read-only store of an older version (it is not migrated).
  category?: string | null;
  turn?: number | null;
  cached_tokens?: number | null;
  resent?: number | null;
}

/**
 * The requests of a trial in the order they were sent. A request whose stored numbers or ITL cannot be read is left
 * out with a warning naming its row (samples rowid) and column, and added to `skipped` for views that list them.
 */
export function trialSamples(db: Db, trialId: number, skipped?: UnreadableRow[]): RequestSample[] {
  const rows = db.prepare('SELECT rowid AS id, * FROM samples WHERE trial_id = ? ORDER BY idx').all(trialId) as SampleRow[];
  return skipUnreadable(rows, sampleFromRow, skipped);
}

function sampleFromRow(stored: SampleRow): RequestSample {
  const row = decodeSampleScalars(stored);
  return {
    index: row.idx,
    sentAtMs: row.sent_at_ms,
    inputTokens: row.input_tokens,
    outputTokens: row.output_tokens,
    ...(row.ttft_ms !== null && { ttftMs: row.ttft_ms }),
    itlMs: decodeItl(row.id, row.itl_json),
    ...(row.tpot_ms !== null && { tpotMs: row.tpot_ms }),
    ...(row.e2e_ms !== null && { e2eMs: row.e2e_ms }),
    ...(typeof row.category === 'string' && { category: row.category }),
    ...(typeof row.turn === 'number' && { turn: row.turn }),
    ...(typeof row.cached_tokens === 'number' && { cachedTokens: row.cached_tokens }),
    ...(row.resent === 1 && { resent: true as const }),
    ...(row.error_kind !== null && {
      error: { kind: row.error_kind as NonNullable<RequestSample['error']>['kind'], message: row.error_message ?? '' },
    }),
  };
}

/** Per (variant, workload) of a run: failed requests in counted trials, and trials that did not count. */
export interface TrialHealth {
  variant: string;
  workload: string;
  /** Failed requests of the valid trials (within the experiment's maxFailedFraction). */
  failedRequests: number;
  invalidTrials: number;
  /** The latest cause of an invalid trial, for the views. */
  lastInvalidReason?: string;
}

export function trialHealth(db: Db, runId: number): TrialHealth[] {
  const byPair = new Map<string, TrialHealth>();
  const entry = (variant: string, workload: string): TrialHealth => {
    const key = pairKey({ variant, workload });
    let health = byPair.get(key);
    if (!health) byPair.set(key, (health = { variant, workload, failedRequests: 0, invalidTrials: 0 }));
    return health;
  };
  for (const trial of listTrials(db, runId)) entry(trial.variant, trial.workload).failedRequests += trial.metrics.failed;
  const invalid = db.prepare('SELECT variant, workload, reason FROM invalid_trials WHERE run_id = ? ORDER BY id').all(runId) as Array<{
    variant: string;
    workload: string;
    reason: string;
  }>;
  for (const row of invalid) {
    const health = entry(row.variant, row.workload);
    health.invalidTrials += 1;
    health.lastInvalidReason = row.reason;
  }
  return [...byPair.values()];
}

export interface InvalidTrialRow {
  variant: string;
  workload: string;
  block: number;
  repetition: number;
  attempt: number;
  completed: number;
  failed: number;
  reason: string;
}

export function listInvalidTrials(db: Db, runId: number): InvalidTrialRow[] {
  return db
    .prepare('SELECT variant, workload, block, repetition, attempt, completed, failed, reason FROM invalid_trials WHERE run_id = ? ORDER BY id')
    .all(runId) as InvalidTrialRow[];
}

/** Server starts of a run beyond its plan: replacements of servers that died during a trial. */
export function unplannedRestarts(db: Db, runId: number): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM servers WHERE run_id = ? AND unplanned = 1').get(runId) as { n: number }).n;
}

export interface LiveServerRow {
  id: number;
  serverKey: string;
  host: string;
  pid?: number;
  runnerPid?: number;
  pidStart?: string;
  pidCmdline?: string;
  /** The lane it ran on (experiment `lanes:`, from 0); absent without lanes. */
  lane?: number;
}

/** Servers of a run that were never marked stopped or failed: still up, or left behind by a killed runner. */
export function unstoppedServers(db: Db, runId: number): LiveServerRow[] {
  const rows = db
    .prepare(
      "SELECT id, server_key, host, pid, runner_pid, pid_start, pid_cmdline, lane FROM servers WHERE run_id = ? AND status IN ('starting', 'ready') ORDER BY id",
    )
    .all(runId) as Array<{
    id: number;
    server_key: string;
    host: string;
    pid: number | null;
    runner_pid: number | null;
    pid_start: string | null;
    pid_cmdline: string | null;
    lane: number | null;
  }>;
  return rows.map((row) => ({
    id: row.id,
    serverKey: row.server_key,
    host: row.host,
    ...(row.pid !== null && { pid: row.pid }),
    ...(row.runner_pid !== null && { runnerPid: row.runner_pid }),
    ...(row.pid_start !== null && { pidStart: row.pid_start }),
    ...(row.pid_cmdline !== null && { pidCmdline: row.pid_cmdline }),
    ...(row.lane !== null && { lane: row.lane }),
  }));
}
