import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createExecutor } from '../../exec/create.js';
import type { Executor } from '../../exec/types.js';
import { collectFingerprint, servelabGitSha } from '../../fingerprint/collect.js';
import { diffFingerprints } from '../../fingerprint/diff.js';
import { DEFAULT_ENV_PATTERNS } from '../../fingerprint/env.js';
import type { Fingerprint } from '../../fingerprint/types.js';
import { configKey } from '../../launch/config.js';
import type { RunningServer } from '../../launch/types.js';
import { describeExit, waitUntilAnswering, watchLiveness } from '../../load/liveness.js';
import { WARMUP_LABEL } from '../../load/run.js';
import type { LevelResult } from '../../load/types.js';
import { BUILTIN_PROFILES } from '../../profiles/builtin.js';
import { previousStartupOptions, recordStartupOutcome } from '../../ready/history.js';
import type { Db } from '../../store/db.js';
import { insertDriftAlarm } from '../../store/drift-alarms.js';
import { storeFault } from '../../store/fault.js';
import { acquireRunLease, LEASE_STALE_MS } from '../../store/lease.js';
import { getFingerprint, listTrials, variantHistory } from '../../store/queries.js';
import { insertInvalidTrial, insertServer, insertTrial, setRunStatus, updateServer, upsertProgress } from '../../store/runs.js';
import type { TrialRecord } from '../../store/types.js';
import { startTrialRecorder } from '../../telemetry/trial.js';
import type { TelemetrySummary } from '../../telemetry/types.js';
import { messageOf, UserError } from '../../util/errors.js';
import { readLastLines } from '../../util/log-tail.js';
import { processIdentity } from '../../util/proc-identity.js';
import { redactor } from '../../util/redact.js';
import { type DriftCheck, driftDecision, formatDriftAlarm, MAX_USEFUL_BAND_PCT } from '../analysis/drift.js';
import { trialKey } from '../plan/plan.js';
import { metricUnit, metricValue, trialMetricsOf } from '../spec/metrics.js';
import type { Plan, PlannedTrial, ResolvedExperiment, ResolvedVariant } from '../spec/types.js';
import { resetCache, trialCache } from './cache.js';
import { campaignControl } from './campaign.js';
import { finalizeRun } from './finalize.js';
import { reapLeftoverServers } from './leftovers.js';
import { attributeDrift, preflightBeforeStart, withPreflight } from './machine.js';
import { createRun, finishedOutcome, loadRun, loadRunToExecute, type RunOutcome } from './run-store.js';

export interface RunOptions {
  db: Db;
  /** Required for a new run; a resume or a Slurm job replays the experiment stored with the run instead. */
  experiment?: ResolvedExperiment;
  /** The plan of a new run, as `servelab plan` costed it (default: planFor(experiment, db)). */
  plan?: Plan;
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

export type { RunOutcome } from './run-store.js';

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
    runId = createRun(db, options.experiment, { ...(gitSha !== undefined && { gitSha }), ...(options.plan && { plan: options.plan }) });
    log(`run ${runId}: ${options.experiment.name}`);
  }
  const { run } = loadRun(db, runId);
  const finished = finishedOutcome(run, options.acceptDrift ?? false);
  if (finished) return finished;
  // One runner per run: a second `--resume` of the same run refuses here instead of measuring the same trials.
  // A Slurm job may be the resubmission of one killed a moment ago: it waits for that lease to go stale.
  const lease = await acquireRunLease(db, runId, options.serverKey ?? '*', { log, ...(options.serverKey !== undefined && { waitMs: LEASE_STALE_MS + 5_000 }) });
  try {
    return await runLeased(options, runId, log);
  } finally {
    lease.release();
  }
}

async function runLeased(options: RunOptions, runId: number, log: (line: string) => void): Promise<RunOutcome> {
  const { db } = options;
  // Read again under the lease: the runner we took over may have stored trials or finished meanwhile.
  const { run, experiment, plan } = loadRunToExecute(db, runId);
  const finished = finishedOutcome(run, options.acceptDrift ?? false);
  if (finished) return finished;

  const stored = listTrials(db, runId);
  const done = new Set(stored.map(trialKey));
  const pending = plan.trials.filter((trial) => !done.has(trialKey(trial)) && (options.serverKey === undefined || trial.serverKey === options.serverKey));
  if (options.serverKey !== undefined && !plan.trials.some((trial) => trial.serverKey === options.serverKey)) {
    throw new UserError(`run ${runId} has no server config ${options.serverKey}`, 'pass a server key from the run plan (`servelab show RUN --json`)');
  }
  if (done.size > 0) log(`run ${runId}: ${done.size} of ${plan.trials.length} trials already measured; ${pending.length} to go`);

  const pairTrials = new Map<string, number>();
  for (const trial of plan.trials) pairTrials.set(pairKey(trial), (pairTrials.get(pairKey(trial)) ?? 0) + 1);
  const context: TrialContext = { db, runId, experiment, options, log, total: plan.trials.length, doneCount: done.size, pairTrials, restarts: 0 };
  const executor = options.executor ?? (await createExecutor(experiment.executor, { workDir: options.workDir }));
  try {
    await reapLeftoverServers(db, runId, executor, { ...(options.serverKey !== undefined && { serverKey: options.serverKey }), log });
  } catch (error) {
    if (!options.executor) await executor.close();
    throw error;
  }
  if (run.status !== 'running') setRunStatus(db, runId, 'running');
  try {
    // Campaign hook (race eliminations, budget stop) between passes; a Slurm job runs its config's trials as planned.
    const campaign = options.serverKey === undefined ? campaignControl(db, runId, experiment, plan, run.startedAt, log) : undefined;
    let queue = pending;
    while (queue.length > 0) {
      if (campaign?.beforePass(queue[0]!.block) !== undefined) break;
      queue = campaign?.keep(queue) ?? queue;
      if (queue.length === 0) break;
      const stretch = leadingStretch(queue);
      const stop = await runStretch(context, executor, stretch);
      if (stop) {
        setRunStatus(db, runId, 'drift', stop);
        return { runId, status: 'drift', message: stop };
      }
      queue = queue.slice(stretch.length);
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
  /** Planned trials per (variant, workload) pair: a pair's drift is confirmed by its second trial when it has one. */
  pairTrials: Map<string, number>;
  /** Server starts beyond the plan's: restarts after a server died during a trial. */
  restarts: number;
}

/** A server of this runner, with how it ended once it did. */
interface ServerHandle {
  running: RunningServer;
  rowId: number;
  exit?: string;
}

type TrialOutcome = { valid: true; alarm?: string } | { valid: false; reason: string };

/** How long a server that stopped answering (an SSH forward being restored, a stall) gets to answer again. */
const RECOVER_MS = 60_000;

/** The queue's leading trials on one server config: one server start. */
function leadingStretch(queue: readonly PlannedTrial[]): PlannedTrial[] {
  const end = queue.findIndex((trial) => trial.serverKey !== queue[0]!.serverKey);
  return queue.slice(0, end < 0 ? queue.length : end);
}

/**
 * Start the stretch's server, run its trials, stop it. An invalid trial is measured again in place, after the server
 * is re-verified (restarted if it died). Returns a drift-alarm message when the run must stop.
 */
async function runStretch(context: TrialContext, executor: Executor, trials: PlannedTrial[]): Promise<string | undefined> {
  const { experiment } = context;
  const serverKey = trials[0]!.serverKey;
  const variants = experiment.variants.filter((variant) => variant.serverKey === serverKey);
  const label = variants.map((variant) => variant.name).join(', ');
  const retries = experiment.validity?.trialRetries ?? 2;
  const preflight = await preflightBeforeStart(executor, variants[0]!.server.env, experiment.preflight, context.log);
  let server = await startServer(context, executor, variants[0]!, label);
  try {
    const fingerprint = withPreflight(await fingerprintOf(context, executor, server.running), preflight);
    for (const trial of trials) {
      const variant = experiment.variants.find((candidate) => candidate.name === trial.variant)!;
      for (let attempt = 0; ; attempt += 1) {
        const outcome = await runTrial(context, executor, server.running, variant, trial, fingerprint, attempt);
        if (outcome.valid) {
          if (outcome.alarm) return outcome.alarm;
          break;
        }
        if (attempt >= retries) throw await trialFailure(context, server, trial, outcome.reason, attempt + 1);
        server = await reverifyServer(context, executor, server, variants[0]!, label);
      }
    }
    return undefined;
  } finally {
    // Read before stop(): our own stop ends the process too, and that is no death.
    const died = server.exit;
    await server.running.stop();
    updateServer(
      context.db,
      server.rowId,
      died === undefined ? { status: 'stopped', phase: 'stopped' } : { status: 'failed', phase: 'failed', message: `${died} during a trial` },
    );
  }
}

async function fingerprintOf(context: TrialContext, executor: Executor, server: RunningServer): Promise<Fingerprint> {
  const { experiment } = context;
  return collectFingerprint(
    executor,
    // Placeholders as configured ({port} unfilled): the port picked at launch is no property of the environment.
    { ...server.template, ...(server.ready.model !== undefined && { model: server.ready.model }) },
    {
      envPatterns: [...DEFAULT_ENV_PATTERNS, ...experiment.fingerprint.envPatterns],
      redactPatterns: experiment.fingerprint.redact,
    },
  );
}

/**
 * After an invalid trial: keep the server if it is up and answers (again: an SSH forward is restored after a
 * reconnect), else stop what is left of it and start a fresh one, which counts as a restart.
 */
async function reverifyServer(context: TrialContext, executor: Executor, server: ServerHandle, variant: ResolvedVariant, label: string): Promise<ServerHandle> {
  const profile = BUILTIN_PROFILES[variant.server.profile]!;
  const signal = context.options.signal;
  const answering =
    server.exit === undefined &&
    (await waitUntilAnswering({
      baseUrl: server.running.baseUrl,
      path: profile.livenessPath ?? profile.healthPath,
      timeoutMs: RECOVER_MS,
      exited: server.running.exited,
      ...(signal && { signal }),
    }));
  if (signal?.aborted) throw new Error('interrupted');
  if (answering && server.exit === undefined) {
    context.log('server is up and answering; measuring the trial again');
    return server;
  }
  const why = server.exit ?? `server did not answer for ${RECOVER_MS / 1000} s`;
  updateServer(context.db, server.rowId, { status: 'failed', phase: 'failed', message: `${why} during a trial` });
  await server.running.stop();
  context.restarts += 1;
  context.log(`${why}; restarting it (unplanned restart ${context.restarts}) and measuring the trial again`);
  return startServer(context, executor, variant, label, true);
}

/** The run stops: cause, the end of the server log, and how to continue. */
async function trialFailure(context: TrialContext, server: ServerHandle, trial: PlannedTrial, reason: string, attempts: number): Promise<UserError> {
  const lines = await server.running.logTail(15).catch(() => []);
  const tail = lines.length > 0 ? lines.map((line) => `  | ${line}`).join('\n') : '  (no log written)';
  return new UserError(
    `trial ${trial.variant} ${trial.workload} #${trial.repetition + 1} was invalid ${attempts} times; last: ${reason}\nlast lines of ${server.running.logPath}:\n${tail}`,
    `fix the cause, then \`servelab run ${context.experiment.filePath} --resume ${context.runId}\` (measured trials are kept)`,
  );
}

/**
 * Store writes made from launch callbacks (phase, pid). A throw there would escape as an uncaught exception and
 * orphan the server, so the first failure (store locked, disk full) is kept and aborts the launch instead, which
 * stops the server; the caller then reports that failure.
 */
class GuardedWrites {
  private readonly controller = new AbortController();
  /** Aborts on the caller's signal (Ctrl-C) or on the first failed write. */
  readonly signal: AbortSignal;
  fault: unknown;

  constructor(outer: AbortSignal | undefined) {
    this.signal = outer ? AbortSignal.any([outer, this.controller.signal]) : this.controller.signal;
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

/** Launch a server config; the launch pipeline itself starts again when a port it picked was taken before the bind. */
async function startServer(context: TrialContext, executor: Executor, variant: ResolvedVariant, label: string, unplanned = false): Promise<ServerHandle> {
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
    unplanned,
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
        // With its start time and command line, so a resume never signals a process that merely reuses the pid.
        onSpawn: writes.guard((pid: number) => {
          const identity = processIdentity(pid);
          updateServer(db, rowId, { pid, ...(identity && { pidStart: identity.start, pidCmdline: identity.cmdline }) });
        }),
        signal: writes.signal,
        onNote: context.log,
        ...previous,
      },
    );
    updateServer(db, rowId, { status: 'ready', phase: 'ready', readyMs: running.ready.elapsedMs });
    recordStartupOutcome(db, startupKey, startedAt, running.ready, runId);
    context.log(`server ready in ${(running.ready.elapsedMs / 1000).toFixed(1)} s at ${running.baseUrl}`);
    const handle: ServerHandle = { running, rowId };
    void running.exited.then((info) => (handle.exit = describeExit(info)));
    return handle;
  } catch (launchError) {
    // A failed store write aborted the launch (which stopped the server): that write is the cause to report.
    const error = writes.fault ?? launchError;
    const lines = readLastLines(logPath, 15);
    const tail =
      lines.length > 0
        ? redactor()
            .args(lines)
            .map((line) => `  | ${line}`)
            .join('\n')
        : '  (no log written)';
    context.log(`server for ${label} failed to start: ${messageOf(storeFault(error))}\nlast lines of ${logPath}:\n${tail}`);
    if (writes.fault === undefined) {
      updateServer(db, rowId, { status: 'failed', phase: 'failed', message: messageOf(error) });
      recordStartupOutcome(db, startupKey, startedAt, error, runId);
    }
    throw error;
  }
}

/**
 * Measure one planned trial while watching the server. A valid trial is stored at once (and checked for drift);
 * an invalid one — the server died or stopped answering, or more requests failed than maxFailedFraction allows —
 * is stored apart with its cause, for the caller to measure again.
 */
async function runTrial(
  context: TrialContext,
  executor: Executor,
  server: RunningServer,
  variant: ResolvedVariant,
  trial: PlannedTrial,
  fingerprint: Fingerprint,
  attempt: number,
): Promise<TrialOutcome> {
  const { db, runId, experiment, options } = context;
  const workload = experiment.workloads.find((candidate) => candidate.label === trial.workload)!;
  const position = `${context.doneCount + 1}/${context.total}`;
  const label = `${trial.variant} ${trial.workload} #${trial.repetition + 1}`;
  const profile = BUILTIN_PROFILES[variant.server.profile]!;
  const model = variant.client.model ?? server.ready.model;
  let lastProgressAt = 0;
  const sharedIndex = experiment.variants.filter((other) => other.serverKey === variant.serverKey).indexOf(variant);
  const cache = trialCache(variant.client.cache, profile, runId, trial.block, sharedIndex);
  if (cache.resetPath) await resetCache(server.baseUrl, cache.resetPath);
  const startedAt = new Date().toISOString();
  // Nothing is fired into a dead server: its death aborts the load client within a second.
  const liveness = watchLiveness({ baseUrl: server.baseUrl, path: profile.livenessPath ?? profile.healthPath, exited: server.exited.then(describeExit) });
  const signal = options.signal ? AbortSignal.any([options.signal, liveness.signal]) : liveness.signal;
  let level: LevelResult | undefined;
  const recorder = startTrialRecorder(executor, server.baseUrl, experiment.telemetry);
  try {
    const result = await executor.bench({
      baseUrl: server.baseUrl,
      backend: variant.client.backend ?? profile.defaultBackend,
      ...(model !== undefined && { model }),
      workload: workload.workload,
      prompts: variant.client.prompts,
      ...(cache.promptSalt !== undefined && { promptSalt: cache.promptSalt }),
      ...(cache.cachePrompt === false && { cachePrompt: false }),
      warmupRequests: variant.client.warmupRequests,
      ignoreEos: variant.client.ignoreEos,
      requestTimeoutMs: variant.client.requestTimeoutMs,
      ...(variant.client.slo && { slo: variant.client.slo }),
      ...(variant.client.tokenizerPath !== undefined && { tokenizerPath: variant.client.tokenizerPath }),
      ...(variant.client.workers !== undefined && { workers: variant.client.workers }),
      specMetrics: 'auto',
      signal,
      verifyServer: liveness.verify,
      onProgress: (progress) => {
        const now = Date.now();
        if (now - lastProgressAt < PROGRESS_INTERVAL_MS && progress.completed < progress.total) return;
        lastProgressAt = now;
        // Warm-up requests are not the trial's: show that it is warming up, never their counts as the trial's.
        const warmingUp = progress.levelLabel === WARMUP_LABEL;
        // Progress is for humans; a store that refuses it (locked, full) fails the trial's own write right after.
        try {
          upsertProgress(db, runId, {
            trialLabel: `${label} (trial ${position})${warmingUp ? ', warming up' : ''}`,
            completed: warmingUp ? 0 : progress.completed,
            total: warmingUp ? 0 : progress.total,
            outputTokensPerSecond: warmingUp ? 0 : progress.outputTokensPerSecond,
          });
        } catch {
          // reported by insertTrial
        }
      },
    });
    level = result.levels[0];
  } catch (error) {
    // A load client that failed because the server went away (e.g. unreachable at the start) measured an invalid
    // trial; check at once rather than waiting for the next probe.
    if (options.signal?.aborted) throw error;
    await liveness.verify();
    if (liveness.cause() === undefined) throw error;
  } finally {
    liveness.stop();
    // Also when the load client threw: the sampler is a child process. stop() is idempotent.
    void recorder.stop();
  }
  const telemetry = await recorder.stop();
  // A trial cut short by the user is not a trial: it is measured again on resume.
  if (options.signal?.aborted) throw new Error('interrupted');
  const died = liveness.cause();
  const reason =
    died !== undefined
      ? `${died} during the trial`
      : level
        ? failureReason(level, experiment.validity?.maxFailedFraction ?? 0)
        : 'the load client measured nothing';
  if (reason !== undefined) {
    const finishedAt = new Date().toISOString();
    insertInvalidTrial(db, {
      runId,
      variant: trial.variant,
      serverKey: trial.serverKey,
      workload: trial.workload,
      block: trial.block,
      repetition: trial.repetition,
      attempt,
      startedAt,
      finishedAt,
      completed: level?.completed ?? 0,
      failed: level?.failed ?? 0,
      reason,
    });
    const counts = level ? ` (${level.completed} ok, ${level.failed} failed)` : '';
    context.log(`trial ${position} ${label}: INVALID${counts}: ${reason}`);
    return { valid: false, reason };
  }
  const metrics = trialMetricsOf(level!);
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
      cache: cache.record,
    },
    fingerprint,
    level!.samples,
    telemetry,
  );
  context.doneCount += 1;
  const value = metricValue(metrics, experiment.metric);
  context.log(`trial ${position} ${label}: ${formatValue(value)} ${metricUnit(experiment.metric)} (${metrics.completed} ok, ${metrics.failed} failed)`);
  const alarm = driftAlarm(context, trial, fingerprint, telemetry?.summary);
  return alarm === undefined ? { valid: true } : { valid: true, alarm };
}

/** Why a measured level may not count, or undefined when it may. */
function failureReason(level: LevelResult, maxFailedFraction: number): string | undefined {
  const total = level.completed + level.failed;
  if (level.completed === 0) return `all ${total} requests failed${firstError(level)}`;
  if (level.failed / total <= maxFailedFraction) return undefined;
  return `${level.failed} of ${total} requests failed (maxFailedFraction ${maxFailedFraction})${firstError(level)}`;
}

function firstError(level: LevelResult): string {
  const error = level.samples.find((sample) => sample.error)?.error;
  return error ? `; first: ${error.kind}: ${error.message}` : '';
}

/** Apply the drift rule (drift.ts: driftDecision) to a pair's trials of this run; the alarm message when the run must stop. */
function driftAlarm(context: TrialContext, trial: PlannedTrial, fingerprint: Fingerprint, machine?: TelemetrySummary): string | undefined {
  const { db, runId, experiment, log } = context;
  const metricOf = (metrics: TrialRecord['metrics']) => metricValue(metrics, experiment.metric);
  const own = listTrials(db, runId)
    .filter((stored) => pairKey(stored) === pairKey(trial))
    .map((stored) => metricOf(stored.metrics))
    .filter((value) => Number.isFinite(value));
  if (own.length === 0 || own.length > 2) return undefined;
  // Valid trials of finished runs only: never this run, a concurrent one, or a failed one.
  const history = variantHistory(db, { experimentName: experiment.name, variant: trial.variant, workload: trial.workload, excludeRunId: runId });
  const values = history.map((past) => metricOf(past.metrics)).filter((past) => Number.isFinite(past));
  if (values.length === 0) return undefined;
  const decision = driftDecision(own, values, { ...experiment.drift, confirmable: (context.pairTrials.get(pairKey(trial)) ?? 1) >= 2 });
  if (!decision) return undefined;
  const { check } = decision;
  const pair = `${trial.variant} ${trial.workload}`;
  if (check.unguarded) log(unguardedNote(pair, check, values.length));
  switch (decision.kind) {
    case 'ok':
      return undefined;
    case 'suspect':
      log(`${pair} is ${formatSigned(check.changePct)} off its history (band ±${check.band.toFixed(0)}%); confirming with its next trial`);
      return undefined;
    case 'not-confirmed':
      log(`${pair}: deviation not confirmed by its second trial (${formatSigned(check.changePct)}, band ±${check.band.toFixed(0)}%); continuing`);
      return undefined;
    case 'alarm':
      return alarmMessage(context, trial, check, history, fingerprint, machine);
  }
}

function alarmMessage(
  context: TrialContext,
  trial: PlannedTrial,
  check: DriftCheck,
  history: readonly TrialRecord[],
  fingerprint: Fingerprint,
  machine: TelemetrySummary | undefined,
): string | undefined {
  const { db, experiment, options, log } = context;
  const recorded = getFingerprint(db, history[0]!.fingerprintId);
  const changes = recorded ? diffFingerprints(recorded, fingerprint) : [];
  const machineChanges = attributeDrift(
    db,
    history.map((past) => past.id),
    machine,
  );
  const alarm = formatDriftAlarm({
    variant: trial.variant,
    metricLabel: metricUnit(experiment.metric),
    current: check.current,
    reference: check.reference,
    changePct: check.changePct,
    changes,
    machine: machineChanges,
  });
  const message = `drift alarm (${trial.workload}, noise band ±${check.band.toFixed(0)}%): ${alarm}`;
  log(message);
  insertDriftAlarm(db, context.runId, {
    variant: trial.variant,
    workload: trial.workload,
    metric: experiment.metric,
    current: check.current,
    reference: check.reference,
    changePct: check.changePct,
    bandPct: check.band,
    changes,
    machine: machineChanges,
    accepted: options.acceptDrift === true,
    message,
  });
  if (options.acceptDrift) {
    log('continuing (--accept-drift)');
    return undefined;
  }
  return message;
}

function unguardedNote(pair: string, check: DriftCheck, historySize: number): string {
  return check.unguarded === 'history too noisy'
    ? `${pair}: history too noisy to guard against drift (band ±${check.band.toFixed(0)}% > ${MAX_USEFUL_BAND_PCT}% over ${historySize} trials): only a change beyond the band stops the run`
    : `${pair}: history too short to guard against drift (${historySize} trials of finished runs)`;
}

function formatSigned(pct: number): string {
  return `${pct >= 0 ? '+' : ''}${pct.toFixed(0)}%`;
}

function pairKey(trial: { variant: string; workload: string }): string {
  return JSON.stringify([trial.variant, trial.workload]);
}

function formatValue(value: number): string {
  return Number.isFinite(value) ? (Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(1)) : 'n/a';
}
