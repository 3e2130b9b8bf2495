import type { Executor } from '../../exec/types.js';
import { servelabGitSha } from '../../fingerprint/collect.js';
import { captureEnv, DEFAULT_ENV_PATTERNS } from '../../fingerprint/env.js';
import type { Fingerprint } from '../../fingerprint/types.js';
import {
  type BisectRecord,
  type BisectSetupRecord,
  bisectRoundRows,
  insertBisect,
  insertBisectRound,
  setBisectStatus,
  unfinishedBisect,
} from '../../store/bisect.js';
import type { Db } from '../../store/db.js';
import { getFingerprint, listRuns, listTrials } from '../../store/queries.js';
import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { redactor } from '../../util/redact.js';
import { type BisectConfig, type BisectView, bisectView, firstRound } from '../analysis/bisect.js';
import { bisectDifferences, type Differences } from '../analysis/bisect-differences.js';
import { type BisectDesign, type BisectPrediction, predictBisect, roundExperiment } from '../plan/bisect-plan.js';
import type { CostModel } from '../plan/budget.js';
import { chooseSchedule } from '../plan/schedule.js';
import { metricUnit } from '../spec/metrics.js';
import type { MetricName, ResolvedExperiment } from '../spec/types.js';
import { configurationChanges } from './reference-guard.js';
import { createRun, loadRun, loadRunToExecute, type RunOutcome } from './run-store.js';
import { runExperiment } from './runner.js';
import { runOnSlurm } from './slurm.js';

/**
 * `servelab bisect`: which of the settable differences between a reference run and a current (slower) run account
 * for the change. Each round is a run of generated variants (plan/bisect-plan.ts) executed by the ordinary runner,
 * so it works wherever `run` does (local, SSH, Slurm) and is resumable like any run; the search and the answer are
 * pure (analysis/bisect.ts) and read from the rounds' stored trials.
 */

export interface BisectRequest {
  db: Db;
  /** The slower run: stopped by the reference guard or a drift alarm, or any run of the experiment. */
  currentRunId: number;
  /** Default: the last finished run of the experiment before it (the reference guard's reference). */
  referenceRunId?: number;
  /** Default: the experiment's baseline. */
  variant?: string;
  /** Default: the experiment's first workload. */
  workload?: string;
  /** Default: the experiment's metric. */
  metric?: MetricName;
  /** Smallest change a setting must cause to be named (default: the file's verdict.minEffect, at least 2%). */
  tolerance?: number;
  /** Trials of each configuration in each round (default: the file's trials, at least 6). */
  trials?: number;
  maxTrials?: number;
  /** Costs for the prediction (the CLI passes the simulator's declared speed). */
  costs: (experiment: ResolvedExperiment) => CostModel;
}

export interface PreparedBisect {
  bisect: BisectRecord;
  design: BisectDesign;
  prediction: BisectPrediction;
  /** True when an unfinished bisect of the same two runs is continued. */
  resumed: boolean;
  labels: { current: string; reference: string; unit: string };
}

/** Smallest tolerance: effects below 2% are within what a rank test on a handful of trials can tell apart. */
const MIN_TOLERANCE = 0.02;
/**
 * The precision target: each effect as precise as one-at-a-time testing with 6 trials per arm (6 vs 6 lets a rank
 * test reach p < 0.05 with a trial out of order). A screening design reaches it with fewer trials (trialsPerConfig).
 */
const MIN_TRIALS = 6;

/**
 * Find the two runs' differences and the design, continuing an unfinished bisect of the same runs; nothing is
 * measured. `dryRun` leaves the store untouched (a new bisect is only recorded when it starts).
 */
export function prepareBisect(request: BisectRequest, options: { dryRun?: boolean; log: (line: string) => void }): PreparedBisect {
  const { db } = request;
  const current = loadRun(db, request.currentRunId);
  const referenceRunId = request.referenceRunId ?? defaultReference(db, current.run.experimentName, request.currentRunId);
  const reference = loadRun(db, referenceRunId);
  if (reference.run.experimentName !== current.run.experimentName) {
    throw new UserError(
      `run ${referenceRunId} is of experiment "${reference.run.experimentName}", run ${request.currentRunId} of "${current.run.experimentName}"`,
      'bisect two runs of one experiment (pass --against RUN)',
      ExitCode.usage,
    );
  }
  const existing = unfinishedBisect(db, request.currentRunId, referenceRunId);
  const { experiment } = loadRunToExecute(db, request.currentRunId);
  const setup = existing?.setup ?? newSetup(request, experiment, reference.experiment, referenceRunId, options.log);
  const bisect: BisectRecord = existing ?? {
    id: options.dryRun ? 0 : insertBisect(db, { currentRunId: request.currentRunId, referenceRunId, setup }),
    createdAt: new Date().toISOString(),
    currentRunId: request.currentRunId,
    referenceRunId,
    setup,
    status: 'running',
  };
  if (existing && request.maxTrials !== undefined) bisect.setup.maxTrials = request.maxTrials;
  const design: BisectDesign = {
    base: experiment,
    bisectId: bisect.id,
    variant: setup.variant,
    workload: setup.workload,
    differences: setup.differences,
    tolerance: setup.tolerance,
    trials: setup.trials,
    passes: setup.passes ?? 1,
    metric: setup.metric as MetricName,
  };
  return {
    bisect,
    design,
    prediction: predictBisect(design, firstRound(setup.differences.map((difference) => difference.name).sort()), request.costs),
    resumed: existing !== undefined,
    labels: { current: `run ${request.currentRunId}`, reference: `run ${referenceRunId}`, unit: metricUnit(setup.metric as MetricName) },
  };
}

/** The last finished run of the experiment before `runId` (else after it): the run the reference guard compared with. */
function defaultReference(db: Db, experimentName: string, runId: number): number {
  const done = listRuns(db, { experimentName }).filter((run) => run.status === 'done' && run.id !== runId);
  const reference = done.find((run) => run.id < runId) ?? done[0];
  if (!reference) {
    throw new UserError(
      `experiment "${experimentName}" has no finished run besides run ${runId} to compare with`,
      'pass the reference run with --against RUN (`servelab ls` lists runs)',
      ExitCode.usage,
    );
  }
  return reference.id;
}

function newSetup(
  request: BisectRequest,
  experiment: ResolvedExperiment,
  referenceExperiment: ResolvedExperiment,
  referenceRunId: number,
  log: (line: string) => void,
): BisectSetupRecord {
  const variant = request.variant ?? experiment.baseline;
  const source = experiment.variants.find((candidate) => candidate.name === variant);
  if (!source || !referenceExperiment.variants.some((candidate) => candidate.name === variant)) {
    throw new UserError(
      `variant "${variant}" is not in both runs`,
      `pass one they share with --variant (${experiment.variants.map((candidate) => candidate.name).join(', ')})`,
      ExitCode.usage,
    );
  }
  const workload = request.workload ?? experiment.workloads[0]!.label;
  if (!experiment.workloads.some((candidate) => candidate.label === workload)) {
    throw new UserError(
      `workload "${workload}" is not in run ${request.currentRunId}`,
      `pass one of ${experiment.workloads.map((w) => w.label).join(', ')} with --workload`,
      ExitCode.usage,
    );
  }
  const referenceFingerprint = runFingerprint(request.db, referenceRunId, variant);
  if (!referenceFingerprint) {
    throw new UserError(
      `run ${referenceRunId} has no measured trial of ${variant}: nothing to compare with`,
      'pass a finished run with --against RUN',
      ExitCode.usage,
    );
  }
  const currentFingerprint =
    runFingerprint(request.db, request.currentRunId, variant) ?? shellFingerprint(experiment, variant, referenceFingerprint, request.currentRunId, log);
  const differences = bisectDifferences(
    configurationChanges(referenceFingerprint, redactor().deep(currentFingerprint)),
    referenceFingerprint,
    currentFingerprint,
  );
  if (differences.settable.length === 0) throw noSettable(differences, request.currentRunId, referenceRunId);
  const tolerance = request.tolerance ?? Math.max(MIN_TOLERANCE, experiment.verdict.minEffect);
  return {
    variant,
    workload,
    metric: request.metric ?? experiment.metric,
    tolerance,
    trials: request.trials ?? Math.max(MIN_TRIALS, experiment.trials),
    ...(request.maxTrials !== undefined && { maxTrials: request.maxTrials }),
    alpha: experiment.verdict.alpha,
    seed: experiment.seed,
    gpusPerServer: experiment.budget?.gpusPerServer ?? 1,
    ...(experiment.passes !== undefined && { passes: experiment.passes }),
    differences: differences.settable,
    fixed: differences.fixed.map(({ change, why }) => ({ ...change, why })),
  };
}

function runFingerprint(db: Db, runId: number, variant: string): Fingerprint | undefined {
  const trial = listTrials(db, runId).find((candidate) => candidate.variant === variant);
  return trial && getFingerprint(db, trial.fingerprintId);
}

/**
 * A run the reference guard stopped measured nothing and stored no fingerprint. On a local executor its
 * configuration is this shell's environment merged as a launch merges it (the guard saw exactly that), the rest
 * as the reference's: only variables and flags can differ for bisect anyway. Elsewhere the environment is the
 * remote host's, which servelab cannot read without starting the server.
 */
function shellFingerprint(experiment: ResolvedExperiment, variant: string, reference: Fingerprint, runId: number, log: (line: string) => void): Fingerprint {
  if (experiment.executor.kind !== 'local') {
    throw new UserError(
      `run ${runId} measured nothing, and its servers' environment is on ${experiment.executor.kind === 'ssh' ? 'the SSH host' : 'the Slurm nodes'}`,
      `measure it once with \`servelab run ${experiment.filePath} --accept-env-change\` (a copy of the store keeps the history clean) and bisect that run`,
    );
  }
  const server = experiment.variants.find((candidate) => candidate.name === variant)!.server;
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !server.unsetEnv.includes(name)) merged[name] = value;
  Object.assign(merged, server.env);
  const secrets = redactor().withPatterns(experiment.fingerprint.redact);
  log(`run ${runId} measured nothing (stopped before its first trial): its configuration is this shell's environment, as the reference guard saw it`);
  return {
    ...reference,
    command: secrets.args(server.command),
    env: captureEnv(merged, [...DEFAULT_ENV_PATTERNS, ...experiment.fingerprint.envPatterns], secrets),
  };
}

function noSettable(differences: Differences, currentRunId: number, referenceRunId: number): UserError {
  const fixed = differences.fixed.map(({ change, why }) => `${change.key} (${why})`).join(', ');
  return new UserError(
    `runs ${currentRunId} and ${referenceRunId} differ in no environment variable or server flag${fixed ? `; only in what bisect cannot set: ${fixed}` : ''}`,
    fixed
      ? 'restore those by hand (install the version, change the machine) and measure again'
      : 'compare them with `servelab diff`: their difference is not in the configuration',
  );
}

export interface BisectRunOptions {
  executor?: Executor;
  signal?: AbortSignal;
  log: (line: string) => void;
  /** The store's path, for Slurm jobs. */
  storePath?: string;
}

export interface BisectOutcome {
  bisectId: number;
  status: 'done' | 'stopped' | 'interrupted' | 'failed';
  message?: string;
  view: BisectView;
}

/**
 * Run (or continue) the rounds until the search is over or the budget stops it: an unfinished round's run is
 * resumed, then each next round is created as a run of its configurations and run to the end.
 */
export async function runBisect(db: Db, prepared: PreparedBisect, request: Pick<BisectRequest, 'costs'>, options: BisectRunOptions): Promise<BisectOutcome> {
  const { bisect, design } = prepared;
  const viewOf = (): BisectView => bisectView(bisect.setup, bisectRoundRows(db, bisect));
  const finish = (status: BisectOutcome['status'], message?: string): BisectOutcome => {
    setBisectStatus(db, bisect.id, status === 'done' ? 'done' : status === 'stopped' ? 'stopped' : 'running', message);
    return { bisectId: bisect.id, status, ...(message !== undefined && { message }), view: viewOf() };
  };
  for (;;) {
    const rounds = bisectRoundRows(db, bisect);
    const last = rounds.at(-1);
    if (last && last.status !== 'done') {
      options.log(`bisect ${bisect.id}: continuing round ${last.round} (run ${last.runId})`);
      const outcome = await executeRound(db, roundExperiment(design, last.round, last.configs), last.runId, options);
      if (outcome.status !== 'done')
        return finish(
          outcome.status === 'interrupted' ? 'interrupted' : 'failed',
          `round ${last.round} (run ${last.runId}): ${outcome.message ?? outcome.status}`,
        );
      continue;
    }
    const view = viewOf();
    const next = last ? view.next : firstRound(design.differences.map((difference) => difference.name).sort());
    if (next.length === 0) return finish('done');
    const round = (last?.round ?? 0) + 1;
    const roundTrials = roundExperiment(design, round, next).trials * next.length;
    const { maxTrials } = bisect.setup;
    if (maxTrials !== undefined && view.cost.trials + roundTrials > maxTrials) {
      return finish(
        'stopped',
        `round ${round} needs ${roundTrials} trials, over --max-trials ${maxTrials} with ${view.cost.trials} spent; raise it and run the same command to continue`,
      );
    }
    const experiment = roundExperiment(design, round, next);
    const plan = chooseSchedule(experiment, request.costs(experiment)).plan;
    const gitSha = await servelabGitSha();
    const runId = createRun(db, experiment, { plan, ...(gitSha !== undefined && { gitSha }) });
    insertBisectRound(db, bisect.id, { round, runId, configs: next });
    options.log(
      `bisect ${bisect.id}: round ${round} (run ${runId}): ${next.length} configurations (${describeRound(next)}), ${experiment.trials} trials each, ${plan.trials.length} trials`,
    );
    const outcome = await executeRound(db, experiment, runId, options);
    if (outcome.status !== 'done')
      return finish(outcome.status === 'interrupted' ? 'interrupted' : 'failed', `round ${round} (run ${runId}): ${outcome.message ?? outcome.status}`);
  }
}

function describeRound(configs: readonly BisectConfig[]): string {
  return configs[0]?.why === 'pair'
    ? 'pairs of an interaction the screening could not tell apart, each restored alone and together'
    : 'a screening design: each factor restored in half of them';
}

/** One round's run by the ordinary machinery: drift alarms are recorded (a bisect is not a history), the guard stays on. */
async function executeRound(db: Db, experiment: ResolvedExperiment, runId: number, options: BisectRunOptions): Promise<RunOutcome> {
  if (experiment.executor.kind === 'slurm') {
    if (!options.storePath) throw new Error('a Slurm bisect needs the store path');
    const { outcome } = await runOnSlurm({
      config: experiment.executor,
      experimentPath: experiment.filePath,
      runId,
      storePath: options.storePath,
      acceptDrift: true,
      ...(options.signal && { signal: options.signal }),
      log: options.log,
    });
    return outcome;
  }
  return runExperiment({
    db,
    runId,
    experiment,
    acceptDrift: true,
    ...(options.executor && { executor: options.executor }),
    ...(options.signal && { signal: options.signal }),
    log: options.log,
  });
}
