import { fingerprintHash } from '../fingerprint/diff.js';
import type { Fingerprint } from '../fingerprint/types.js';
import type { RequestSample } from '../metrics/types.js';
import type { TrialTelemetry } from '../telemetry/types.js';
import { redactor } from '../util/redact.js';
import { decodeTrialMetrics, decodeTrialParams, decodeTrialScalars, encodeTrialMetrics } from './columns.js';
import type { Db } from './db.js';
import { describeUnreadable, UnreadableRowError } from './row-json.js';
import { encodeVersioned } from './run-json.js';
import type { RunStatus, TrialRecord } from './types.js';

/**
 * Writes of the experiment runner. Every function is one statement or one transaction, so a crash never leaves half a
 * trial. Every text that could carry a secret (configs, fingerprints, messages, labels) is redacted on the way in.
 */

const clean = (text: string): string => redactor().text(text);
const cleanJson = (value: unknown): string => JSON.stringify(redactor().deep(value));

const now = (): string => new Date().toISOString();

export function ensureExperiment(db: Db, name: string, filePath: string): number {
  db.prepare('INSERT OR IGNORE INTO experiments (name, file_path, created_at) VALUES (?, ?, ?)').run(clean(name), clean(filePath), now());
  const row = db.prepare('SELECT id FROM experiments WHERE name = ? AND file_path = ?').get(clean(name), clean(filePath)) as { id: number };
  return row.id;
}

export interface NewRun {
  experimentId: number;
  servelabVersion: string;
  gitSha?: string;
  config: object;
  plan: object;
}

export function insertRun(db: Db, run: NewRun): number {
  const result = db
    .prepare(
      `INSERT INTO runs (experiment_id, started_at, status, servelab_version, git_sha, config_json, plan_json)
       VALUES (?, ?, 'running', ?, ?, ?, ?)`,
    )
    .run(
      run.experimentId,
      now(),
      run.servelabVersion,
      run.gitSha ?? null,
      encodeVersioned(redactor().deep(run.config)),
      encodeVersioned(redactor().deep(run.plan)),
    );
  return Number(result.lastInsertRowid);
}

/** 'running' clears finished_at and message (a resumed run); any other status stamps the end. */
export function setRunStatus(db: Db, runId: number, status: RunStatus, message?: string): void {
  db.prepare('UPDATE runs SET status = ?, message = ?, finished_at = ? WHERE id = ?').run(
    status,
    message === undefined ? null : clean(message),
    status === 'running' ? null : now(),
    runId,
  );
}

/** A search run's plan grows by a block each time its strategy decides one (experiment/run/search-control.ts). */
export function setRunPlan(db: Db, runId: number, plan: object): void {
  db.prepare('UPDATE runs SET plan_json = ? WHERE id = ?').run(encodeVersioned(redactor().deep(plan)), runId);
}

export function setRunVerdicts(db: Db, runId: number, verdicts: unknown): void {
  db.prepare('UPDATE runs SET verdict_json = ? WHERE id = ?').run(JSON.stringify(verdicts), runId);
}

/** Fingerprints are content-addressed: equal environments share one row. */
export function upsertFingerprint(db: Db, fingerprint: Fingerprint): number {
  const stored = redactor().deep(fingerprint);
  const hash = fingerprintHash(stored);
  db.prepare('INSERT OR IGNORE INTO fingerprints (hash, json) VALUES (?, ?)').run(hash, JSON.stringify(stored));
  return (db.prepare('SELECT id FROM fingerprints WHERE hash = ?').get(hash) as { id: number }).id;
}

export type NewTrial = Omit<TrialRecord, 'id' | 'fingerprintId'>;

/**
 * Persist a finished trial, its fingerprint, all its samples and its machine telemetry in ONE transaction. Returns
 * undefined when the trial was already stored (a resumed run racing its earlier self): the UNIQUE key keeps exactly
 * one copy. A stored copy whose figures cannot be read (readers leave it out, so a resume measures it again) is
 * replaced, with a warning: else the run could never be complete.
 */
export function insertTrial(
  db: Db,
  trial: NewTrial,
  fingerprint: Fingerprint,
  samples: readonly RequestSample[],
  telemetry?: TrialTelemetry,
): number | undefined {
  const insertTrialRow = db.prepare(
    `INSERT OR IGNORE INTO trials (run_id, variant, server_key, workload, concurrency, params_json, block, repetition,
       started_at, finished_at, metrics_json, cache, fingerprint_id, lane)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertSample = db.prepare(
    `INSERT INTO samples (trial_id, idx, sent_at_ms, input_tokens, output_tokens, ttft_ms, tpot_ms, e2e_ms, itl_json,
       error_kind, error_message, category, turn, cached_tokens, resent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertTelemetry = db.prepare(
    'INSERT INTO trial_telemetry (trial_id, summary_json, series_json, server_metrics_json, started_at_ms) VALUES (?, ?, ?, ?, ?)',
  );
  return db
    .transaction((): number | undefined => {
      dropUnreadableCopy(db, trial);
      const fingerprintId = upsertFingerprint(db, fingerprint);
      const result = insertTrialRow.run(
        trial.runId,
        trial.variant,
        trial.serverKey,
        trial.workload,
        trial.concurrency ?? null,
        cleanJson(trial.params),
        trial.block,
        trial.repetition,
        trial.startedAt,
        trial.finishedAt,
        encodeTrialMetrics(trial.metrics),
        trial.cache ?? null,
        fingerprintId,
        trial.lane ?? null,
      );
      if (result.changes === 0) return undefined;
      const trialId = Number(result.lastInsertRowid);
      for (const sample of samples) {
        insertSample.run(
          trialId,
          sample.index,
          sample.sentAtMs,
          sample.inputTokens,
          sample.outputTokens,
          sample.ttftMs ?? null,
          sample.tpotMs ?? null,
          sample.e2eMs ?? null,
          JSON.stringify(sample.itlMs),
          sample.error?.kind ?? null,
          sample.error === undefined ? null : clean(sample.error.message),
          sample.category ?? null,
          sample.turn ?? null,
          sample.cachedTokens ?? null,
          sample.resent ? 1 : null,
        );
      }
      if (telemetry)
        insertTelemetry.run(
          trialId,
          JSON.stringify(telemetry.summary),
          JSON.stringify(telemetry.series),
          JSON.stringify(telemetry.serverMetrics),
          telemetry.startedAt,
        );
      return trialId;
    })
    .immediate();
}

function dropUnreadableCopy(db: Db, trial: NewTrial): void {
  const row = db
    .prepare(
      `SELECT id, params_json, metrics_json, concurrency, block, repetition, fingerprint_id FROM trials
       WHERE run_id = ? AND variant = ? AND workload = ? AND block = ? AND repetition = ?`,
    )
    .get(trial.runId, trial.variant, trial.workload, trial.block, trial.repetition) as { id: number; params_json: string; metrics_json: string } | undefined;
  if (!row) return;
  try {
    decodeTrialScalars(row);
    decodeTrialParams(row.id, row.params_json);
    decodeTrialMetrics(row.id, row.metrics_json);
    return;
  } catch (error) {
    if (!(error instanceof UnreadableRowError)) throw error;
    process.stderr.write(`warning: replacing ${describeUnreadable(error.row)} with the trial just measured\n`);
  }
  for (const table of ['samples', 'trial_telemetry']) db.prepare(`DELETE FROM ${table} WHERE trial_id = ?`).run(row.id);
  db.prepare('DELETE FROM trials WHERE id = ?').run(row.id);
}

export interface InvalidTrial {
  runId: number;
  variant: string;
  serverKey: string;
  workload: string;
  block: number;
  repetition: number;
  /** 0 for the first measurement of this planned trial, 1 for its first re-run... */
  attempt: number;
  startedAt: string;
  finishedAt: string;
  completed: number;
  failed: number;
  /** Why it may not count, e.g. "server was killed by SIGKILL during the trial". */
  reason: string;
  /** Lane index (experiment `lanes:`); absent without lanes. */
  lane?: number;
}

/** Keep a trial that may not count, with its cause: it never enters verdicts, drift history or charts. */
export function insertInvalidTrial(db: Db, trial: InvalidTrial): void {
  db.prepare(
    `INSERT INTO invalid_trials (run_id, variant, server_key, workload, block, repetition, attempt, started_at, finished_at, completed, failed, reason, lane)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    trial.runId,
    trial.variant,
    trial.serverKey,
    trial.workload,
    trial.block,
    trial.repetition,
    trial.attempt,
    trial.startedAt,
    trial.finishedAt,
    trial.completed,
    trial.failed,
    clean(trial.reason),
    trial.lane ?? null,
  );
}

export interface ServerRowStart {
  runId: number;
  /** The runner process on this host, so a resume can tell a crashed runner from a live one. */
  runnerPid: number;
  serverKey: string;
  label: string;
  host: string;
  logPath: string;
  predictedReadyMs?: number;
  /** Replaces a server that died during a trial (counted as a restart beyond the plan). */
  unplanned?: boolean;
  /** Lane index (experiment `lanes:`); absent without lanes. */
  lane?: number;
}

export function insertServer(db: Db, server: ServerRowStart): number {
  const at = now();
  const result = db
    .prepare(
      `INSERT INTO servers (run_id, server_key, label, host, status, phase, started_at, updated_at, predicted_ready_ms, log_path, runner_pid, unplanned, lane)
       VALUES (?, ?, ?, ?, 'starting', 'launching', ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(
      server.runId,
      server.serverKey,
      clean(server.label),
      clean(server.host),
      at,
      at,
      server.predictedReadyMs ?? null,
      server.logPath,
      server.runnerPid,
      server.unplanned ? 1 : 0,
      server.lane ?? null,
    );
  return Number(result.lastInsertRowid);
}

export interface ServerRowUpdate {
  status?: 'starting' | 'ready' | 'failed' | 'stopped';
  phase?: string;
  readyMs?: number;
  predictedReadyMs?: number;
  message?: string;
  /** Process id of a server started on this machine. */
  pid?: number;
  /** Start time and command line of that process (see util/proc-identity.ts): a leftover is stopped only when both match. */
  pidStart?: string;
  pidCmdline?: string;
}

export function updateServer(db: Db, serverId: number, update: ServerRowUpdate): void {
  db.prepare(
    `UPDATE servers SET status = COALESCE(?, status), phase = COALESCE(?, phase), ready_ms = COALESCE(?, ready_ms),
       predicted_ready_ms = COALESCE(?, predicted_ready_ms), message = COALESCE(?, message), pid = COALESCE(?, pid),
       pid_start = COALESCE(?, pid_start), pid_cmdline = COALESCE(?, pid_cmdline), updated_at = ? WHERE id = ?`,
  ).run(
    update.status ?? null,
    update.phase === undefined ? null : clean(update.phase),
    update.readyMs ?? null,
    update.predictedReadyMs ?? null,
    update.message === undefined ? null : clean(update.message),
    update.pid ?? null,
    update.pidStart ?? null,
    update.pidCmdline ?? null,
    now(),
    serverId,
  );
}

export interface ProgressUpdate {
  /** The lane measuring it (experiment `lanes:`); absent without lanes. */
  lane?: { index: number; name: string };
  trialLabel: string;
  completed: number;
  total: number;
  outputTokensPerSecond: number;
}

export function upsertProgress(db: Db, runId: number, progress: ProgressUpdate): void {
  db.prepare(
    `INSERT INTO progress (run_id, lane, lane_name, trial_label, completed, total, output_tokens_per_second, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (run_id, lane) DO UPDATE SET lane_name = excluded.lane_name, trial_label = excluded.trial_label, completed = excluded.completed,
       total = excluded.total, output_tokens_per_second = excluded.output_tokens_per_second, updated_at = excluded.updated_at`,
  ).run(
    runId,
    progress.lane?.index ?? 0,
    progress.lane === undefined ? null : clean(progress.lane.name),
    clean(progress.trialLabel),
    progress.completed,
    progress.total,
    progress.outputTokensPerSecond,
    now(),
  );
}
