import type { Db } from '../store/db.js';
import { getRun } from '../store/queries.js';
import { ensureExperiment, insertRun } from '../store/runs.js';
import type { RunDetail } from '../store/queries.js';
import { UserError } from '../util/errors.js';
import { VERSION } from '../version.js';
import { planExperiment } from './plan.js';
import type { RunOutcome } from './finalize.js';
import type { Plan, ResolvedExperiment } from './types.js';
import { ExitCode } from '../util/exit.js';

/** The trial plan of an experiment: deterministic in its seed, so a stored plan and a fresh one agree. */
export function planFor(experiment: ResolvedExperiment): Plan {
  return planExperiment({
    variants: experiment.variants,
    workloads: experiment.workloads.map((workload) => workload.label),
    repetitions: experiment.trials,
    seed: experiment.seed,
  });
}

/** Record a new run (status 'running') with its resolved config and plan; the Slurm dispatcher calls this too. */
export function createRun(db: Db, experiment: ResolvedExperiment, options: { gitSha?: string } = {}): number {
  const experimentId = ensureExperiment(db, experiment.name, experiment.filePath);
  return insertRun(db, {
    experimentId,
    servelabVersion: VERSION,
    ...(options.gitSha !== undefined && { gitSha: options.gitSha }),
    config: experiment,
    plan: planFor(experiment),
  });
}

export interface StoredRun {
  run: RunDetail;
  experiment: ResolvedExperiment;
  plan: Plan;
}

/** A run with its stored experiment and plan — what a resume or a Slurm job replays. */
export function loadRun(db: Db, runId: number): StoredRun {
  const run = getRun(db, runId);
  if (!run) throw new UserError(`run ${runId} is not in the store`, 'list runs with `servelab ls` (and check --store)', ExitCode.usage);
  return { run, experiment: run.config as ResolvedExperiment, plan: run.plan as Plan };
}

/**
 * Before continuing a stored run: one a drift alarm stopped continues only when the drift is accepted (else a
 * UserError); a finished one has nothing left to run and gives back its stored outcome.
 */
export function finishedOutcome(run: RunDetail, acceptDrift: boolean): RunOutcome | undefined {
  if (run.status === 'drift' && !acceptDrift) {
    throw new UserError(`run ${run.id} stopped on a drift alarm: ${run.message ?? ''}`, 'fix the environment and start a new run, or resume with --accept-drift');
  }
  if (run.status !== 'done') return undefined;
  return { runId: run.id, status: 'done', ...(run.verdicts !== undefined && { verdicts: run.verdicts as RunOutcome['verdicts'] }) };
}

/** Key of a planned trial, matching the store's UNIQUE (run, variant, workload, block, repetition). */
export function trialKey(trial: { variant: string; workload: string; block: number; repetition: number }): string {
  return JSON.stringify([trial.variant, trial.workload, trial.block, trial.repetition]);
}
