import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createExecutor } from '../exec/create.js';
import type { Executor } from '../exec/types.js';
import { collectFingerprint, servelabGitSha } from '../fingerprint/collect.js';
import { diffFingerprints } from '../fingerprint/diff.js';
import { DEFAULT_ENV_PATTERNS } from '../fingerprint/env.js';
import type { Fingerprint } from '../fingerprint/types.js';
import type { RunningServer } from '../launch/types.js';
import { BUILTIN_PROFILES } from '../profiles/builtin.js';
import type { Db } from '../store/db.js';
import { getFingerprint, listTrials, variantHistory } from '../store/queries.js';
import { insertServer, insertTrial, setRunStatus, updateServer, upsertProgress } from '../store/runs.js';
import { configKey } from '../launch/config.js';
import { storeFault } from '../store/fault.js';
import { redactor } from '../util/redact.js';
import { previousStartupOptions, recordStartupOutcome } from '../ready/history.js';
import { UserError, messageOf } from '../util/errors.js';
import { readLastLines } from '../util/log-tail.js';
import { checkDrift, formatDriftAlarm } from './drift.js';
import { finalizeRun, type RunOutcome } from './finalize.js';
import { reapLeftoverServers } from './leftovers.js';
import { metricUnit, metricValue, trialMetricsOf } from './metrics.js';
import { createRun, finishedOutcome, loadRunToExecute, trialKey } from './run-store.js';
import type { PlannedTrial, ResolvedExperiment, ResolvedVariant } from './types.js';

export interface RunOptions {
  db: Db;
  /** Required for a new run; a resume or a Slurm job replays the experiment stored with the run instead. */
  experiment?: ResolvedExperiment;
  /** Attach to an existing run (resume, Slurm job). */
  runId?: number;
  /** Run only the trials of this server config and leave the run open (one Slurm job). */
  serverKey?: string;
  /** Record and continue past drift alarms. */
  acceptDrift?: boolean;
  /** Default: createExecutor(experiment.executor). */
  executor?: Executor;
  /** Server logs go to <workDir>/run-<id>/. */
  workDir: string;
  signal?: AbortSignal;
  /** Progress lines (the CLI writes them to stderr). */
  log?: (line: string) => void;
}

export type { RunOutcome } from './finalize.js';

/** Progress rows are for humans and `servelab ui`; a few writes a second are plenty. */
const PROGRESS_INTERVAL_MS = 250;

/**
 * Execute (or continue) a run: start each server config once per stretch of the plan, measure its trials, store
 * each finished trial at once, stop on a drift alarm, and finalize when every trial is in.
 */
export async function runExperiment(options: RunOptions): Promise<RunOutcome> {
  const { db } = options;
  const log = options.log ?? (() => {});
  let runId = options.runId;
  if (runId === undefined) {
    if (!options.experiment) throw new Error('runExperiment needs an experiment or a runId');
    const gitSha = await servelabGitSha();
    runId = createRun(db, options.experiment, gitSha === undefined ? {} : { gitSha });
    log(`run ${runId}: ${options.experiment.name}`);
  }
  const { run, experiment, plan } = loadRunToExecute(db, runId);
  const finished = finishedOutcome(run, options.acceptDrift ?? false);
  if (finished) return finished;

  const stored = listTrials(db, runId);
  const done = new Set(stored.map(trialKey));
  const checked = new Set(stored.map((trial) => pairKey(trial)));
  const pending = plan.trials.filter((trial) => !done.has(trialKey(trial)) && (options.serverKey === undefined || trial.serverKey === options.serverKey));
  if (options.serverKey !== undefined && !plan.trials.some((trial) => trial.serverKey === options.serverKey)) {
    throw new UserError(`run ${runId} has no server config ${options.serverKey}`, 'pass a server key from the run plan (`servelab show RUN --json`)');
  }
  if (done.size > 0) log(`run ${runId}: ${done.size} of ${plan.trials.length} trials already measured; ${pending.length} to go`);

  const context: TrialContext = { db, runId, experiment, options, log, total: plan.trials.length, doneCount: done.size, checked };
  const executor = options.executor ?? (await createExecutor(experiment.executor, { workDir: options.workDir }));
  try {
    await reapLeftoverServers(db, runId, executor, { ...(options.serverKey !== undefined && { serverKey: options.serverKey }), log });
  } catch (error) {
    if (!options.executor) await executor.close();
    throw error;
  }
  if (run.status !== 'running') setRunStatus(db, runId, 'running');
  try {
    for (const stretch of stretches(pending)) {
      const stop = await runStretch(context, executor, stretch);
      if (stop) {
        setRunStatus(db, runId, 'drift', stop);
        return { runId, status: 'drift', message: stop };
      }
    }
  } catch (error) {
    const interrupted = options.signal?.aborted ?? false;
    const fault = storeFault(error);
    const message = interrupted ? 'interrupted; measured trials are kept' : messageOf(fault);
    try {
      setRunStatus(db, runId, interrupted ? 'interrupted' : 'failed', message);
    } catch {
      // The store itself is failing (locked, full): the run stays 'running' and a resume picks it up all the same.
    }
    if (interrupted) return { runId, status: 'interrupted', message };
    if (fault !== error && fault instanceof UserError) {
      throw new UserError(fault.message, `${fault.hint}: \`servelab run --resume ${runId}\` (measured trials are kept)`);
    }
    throw error;
  } finally {
    if (!options.executor) await executor.close();
  }
  if (options.serverKey !== undefined) return { runId, status: 'running', message: `server config ${options.serverKey} finished` };
  return finalizeRun(db, runId);
}

interface TrialContext {
  db: Db;
  runId: number;
  experiment: ResolvedExperiment;
  options: RunOptions;
  log: (line: string) => void;
  total: number;
  doneCount: number;
  /** (variant, workload) pairs already measured in this run: the drift alarm looks only at a pair's first trial. */
  checked: Set<string>;
}

/** Consecutive trials on one server config: one server start each. */
function stretches(trials: readonly PlannedTrial[]): PlannedTrial[][] {
  const groups: PlannedTrial[][] = [];
  for (const trial of trials) {
    const last = groups.at(-1);
    if (last && last[0]!.serverKey === trial.serverKey) last.push(trial);
    else groups.push([trial]);
  }
  return groups;
}

/** Start the stretch's server, run its trials, stop it. Returns a drift-alarm message when the run must stop. */
async function runStretch(context: TrialContext, executor: Executor, trials: PlannedTrial[]): Promise<string | undefined> {
  const { experiment } = context;
  const serverKey = trials[0]!.serverKey;
  const variants = experiment.variants.filter((variant) => variant.serverKey === serverKey);
  const server = await startServer(context, executor, variants[0]!, variants.map((variant) => variant.name).join(', '));
  try {
    const fingerprint = await collectFingerprint(
      executor,
      // The command as configured ({port} unfilled): the port picked at launch is no property of the environment.
      { command: variants[0]!.server.command, env: server.running.env, ...(server.running.ready.model !== undefined && { model: server.running.ready.model }) },
      {
        envPatterns: [...DEFAULT_ENV_PATTERNS, ...experiment.fingerprint.envPatterns],
        redactPatterns: experiment.fingerprint.redact,
      },
    );
    for (const trial of trials) {
      const variant = experiment.variants.find((candidate) => candidate.name === trial.variant)!;
      const alarm = await runTrial(context, executor, server.running, variant, trial, fingerprint);
      if (alarm) return alarm;
    }
    return undefined;
  } finally {
    await server.running.stop();
    updateServer(context.db, server.rowId, { status: 'stopped', phase: 'stopped' });
  }
}

/** A free port is picked, released, then bound by the server: another process can take it in between. */
const PORT_TAKEN = /EADDRINUSE|address already in use/i;

/** Launch a server config, retrying once when its port was taken between the pick and the server's bind. */
async function startServer(
  context: TrialContext,
  executor: Executor,
  variant: ResolvedVariant,
  label: string,
): Promise<{ running: RunningServer; rowId: number }> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await launchOnce(context, executor, variant, label);
    } catch (error) {
      if (attempt > 1 || !(error instanceof LaunchFailure) || !PORT_TAKEN.test(error.logTail) || context.options.signal?.aborted) {
        throw error instanceof LaunchFailure ? error.cause : error;
      }
      context.log('its port was taken before the server could bind it; starting again on another port');
    }
  }
}

/**
 * Store writes made from launch callbacks (phase, pid). A throw there would escape as an uncaught exception and
 * orphan the server, so the first failure (store locked, disk full) is kept and aborts the launch instead, which
 * stops the server; the caller then reports that failure.
 */
class GuardedWrites {
  private readonly controller = new AbortController();
  fault: unknown;

  constructor(outer: AbortSignal | undefined) {
    outer?.addEventListener('abort', () => this.controller.abort(), { once: true });
    if (outer?.aborted) this.controller.abort();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  guard<A extends unknown[]>(write: (...args: A) => void): (...args: A) => void {
    return (...args) => {
      if (this.fault !== undefined) return;
      try {
        write(...args);
      } catch (error) {
        this.fault = error;
        this.controller.abort();
      }
    };
  }
}

/** A failed launch with the end of its log, which tells a port race from a real failure. */
class LaunchFailure extends Error {
  constructor(
    override readonly cause: unknown,
    readonly logTail: string,
  ) {
    super(messageOf(cause));
  }
}

async function launchOnce(
  context: TrialContext,
  executor: Executor,
  variant: ResolvedVariant,
  label: string,
): Promise<{ running: RunningServer; rowId: number }> {
  const { db, runId, options } = context;
  const config = variant.server;
  const profile = BUILTIN_PROFILES[config.profile];
  if (!profile) throw new UserError(`unknown server profile "${config.profile}"`, 'use a built-in profile name');
  const logDir = join(options.workDir, `run-${runId}`);
  mkdirSync(logDir, { recursive: true });
  const logPath = join(logDir, `${variant.serverKey}-${Date.now()}.log`);
  // Startup history is shared with `servelab launch`: same key for the same command, env changes and profile.
  const startupKey = configKey({ command: config.command, env: config.env, unsetEnv: config.unsetEnv, profile: config.profile });
  const previous = previousStartupOptions(db, startupKey);
  const predictedReadyMs = previous.previousReadyMs;
  const rowId = insertServer(db, {
    runId,
    runnerPid: process.pid,
    serverKey: variant.serverKey,
    label,
    host: executor.hostLabel,
    logPath,
    ...(predictedReadyMs !== undefined && { predictedReadyMs }),
  });
  const startedAt = new Date();
  context.log(`starting server for ${label} (log: ${logPath})`);
  const writes = new GuardedWrites(options.signal);
  try {
    const running = await executor.launch(
      {
        command: config.command,
        env: config.env,
        unsetEnv: config.unsetEnv,
        ...(config.cwd !== undefined && { cwd: config.cwd }),
        ...(config.port !== undefined && { port: config.port }),
        profile,
        logPath,
        readyTimeoutMs: config.readyTimeoutMs,
        verifyServing: config.verifyServing,
        ...(config.model !== undefined && { model: config.model }),
      },
      {
        onProgress: writes.guard((progress) =>
          updateServer(db, rowId, {
            phase: progress.phase,
            ...(progress.predictedRemainingMs !== undefined && { predictedReadyMs: progress.elapsedMs + progress.predictedRemainingMs }),
          }),
        ),
        // Recorded at spawn, not at ready: a resumed run must be able to stop a server killed mid-load.
        onSpawn: writes.guard((pid: number) => updateServer(db, rowId, { pid })),
        signal: writes.signal,
        ...previous,
      },
    );
    updateServer(db, rowId, { status: 'ready', phase: 'ready', readyMs: running.ready.elapsedMs });
    recordStartupOutcome(db, startupKey, startedAt, running.ready, runId);
    context.log(`server ready in ${(running.ready.elapsedMs / 1000).toFixed(1)} s at ${running.baseUrl}`);
    return { running, rowId };
  } catch (launchError) {
    // A failed store write aborted the launch (which stopped the server): that write is the cause to report.
    const error = writes.fault ?? launchError;
    const lines = readLastLines(logPath, 15);
    const tail = lines.length > 0 ? redactor().args(lines).map((line) => `  | ${line}`).join('\n') : '  (no log written)';
    context.log(`server for ${label} failed to start: ${messageOf(storeFault(error))}\nlast lines of ${logPath}:\n${tail}`);
    if (writes.fault === undefined) {
      updateServer(db, rowId, { status: 'failed', phase: 'failed', message: messageOf(error) });
      recordStartupOutcome(db, startupKey, startedAt, error, runId);
    }
    throw new LaunchFailure(error, tail);
  }
}

async function runTrial(
  context: TrialContext,
  executor: Executor,
  server: RunningServer,
  variant: ResolvedVariant,
  trial: PlannedTrial,
  fingerprint: Fingerprint,
): Promise<string | undefined> {
  const { db, runId, experiment, options } = context;
  const workload = experiment.workloads.find((candidate) => candidate.label === trial.workload)!;
  const position = `${context.doneCount + 1}/${context.total}`;
  const label = `${trial.variant} ${trial.workload} #${trial.repetition + 1}`;
  const profile = BUILTIN_PROFILES[variant.server.profile]!;
  const model = variant.client.model ?? server.ready.model;
  let lastProgressAt = 0;
  const startedAt = new Date().toISOString();
  const result = await executor.bench({
    baseUrl: server.baseUrl,
    backend: variant.client.backend ?? profile.defaultBackend,
    ...(model !== undefined && { model }),
    workload: workload.workload,
    prompts: variant.client.prompts,
    warmupRequests: variant.client.warmupRequests,
    ignoreEos: variant.client.ignoreEos,
    requestTimeoutMs: variant.client.requestTimeoutMs,
    ...(variant.client.slo && { slo: variant.client.slo }),
    specMetrics: 'auto',
    ...(options.signal && { signal: options.signal }),
    onProgress: (progress) => {
      const now = Date.now();
      if (now - lastProgressAt < PROGRESS_INTERVAL_MS && progress.completed < progress.total) return;
      lastProgressAt = now;
      // Progress is for humans; a store that refuses it (locked, full) fails the trial's own write right after.
      try {
        upsertProgress(db, runId, { trialLabel: `${label} (trial ${position})`, completed: progress.completed, total: progress.total, outputTokensPerSecond: progress.outputTokensPerSecond });
      } catch {
        // reported by insertTrial
      }
    },
  });
  // A trial cut short is not a trial: it is measured again on resume.
  if (result.interrupted || options.signal?.aborted) throw new Error('interrupted');
  const level = result.levels[0];
  if (!level) throw new UserError(`trial ${label} measured nothing`, `check the server log ${server.logPath}`);
  const metrics = trialMetricsOf(level);
  insertTrial(
    db,
    {
      runId,
      variant: trial.variant,
      serverKey: trial.serverKey,
      workload: trial.workload,
      ...(workload.concurrency !== undefined && { concurrency: workload.concurrency }),
      params: variant.params,
      block: trial.block,
      repetition: trial.repetition,
      startedAt,
      finishedAt: new Date().toISOString(),
      metrics,
    },
    fingerprint,
    level.samples,
  );
  context.doneCount += 1;
  const value = metricValue(metrics, experiment.metric);
  context.log(`trial ${position} ${label}: ${formatValue(value)} ${metricUnit(experiment.metric)} (${metrics.completed} ok, ${metrics.failed} failed)`);

  const pair = pairKey(trial);
  if (context.checked.has(pair)) return undefined;
  context.checked.add(pair);
  return driftAlarm(context, trial, value, fingerprint);
}

/** Compare a pair's first trial of this run with its recorded history; a message when it moved beyond the noise band. */
function driftAlarm(context: TrialContext, trial: PlannedTrial, value: number, fingerprint: Fingerprint): string | undefined {
  const { db, runId, experiment, options, log } = context;
  const history = variantHistory(db, { experimentName: experiment.name, variant: trial.variant, workload: trial.workload, excludeRunId: runId });
  const values = history.map((past) => metricValue(past.metrics, experiment.metric)).filter((past) => Number.isFinite(past));
  if (values.length === 0 || !Number.isFinite(value)) return undefined;
  const check = checkDrift([value], values, experiment.drift);
  if (!check.drifted) return undefined;
  const recorded = getFingerprint(db, history[0]!.fingerprintId);
  const alarm = formatDriftAlarm({
    variant: trial.variant,
    metricLabel: metricUnit(experiment.metric),
    current: check.current,
    reference: check.reference,
    changePct: check.changePct,
    changes: recorded ? diffFingerprints(recorded, fingerprint) : [],
  });
  const message = `drift alarm (${trial.workload}, noise band ±${check.band.toFixed(0)}%): ${alarm}`;
  log(message);
  if (options.acceptDrift) {
    log('continuing (--accept-drift)');
    return undefined;
  }
  return message;
}

function pairKey(trial: { variant: string; workload: string }): string {
  return JSON.stringify([trial.variant, trial.workload]);
}

function formatValue(value: number): string {
  return Number.isFinite(value) ? (Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(1)) : 'n/a';
}
