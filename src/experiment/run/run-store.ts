import type { Db } from '../../store/db.js';
import type { RunDetail } from '../../store/queries.js';
import { getRun } from '../../store/queries.js';
import { ensureExperiment, insertRun } from '../../store/runs.js';
import type { RunStatus } from '../../store/types.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { containsMarker, redactor } from '../../util/redact.js';
import { VERSION } from '../../version.js';
import { loadCostModel } from '../plan/budget.js';
import { chooseSchedule } from '../plan/schedule.js';
import { loadExperiment } from '../spec/load.js';
import { storedExperimentOf, storedVerdictsOf } from '../spec/stored.js';
import type { Plan, ResolvedExperiment, VariantVerdict } from '../spec/types.js';

/**
 * The trial plan of an experiment: deterministic in its seed and costs. Without a store, `schedule: auto` decides
 * on the stated default costs; `servelab run` passes the plan it costed from the store instead.
 */
export interface RunOutcome {
  runId: number;
  status: RunStatus;
  message?: string;
  verdicts?: VariantVerdict[];
}

export function planFor(experiment: ResolvedExperiment, db?: Db): Plan {
  return chooseSchedule(experiment, loadCostModel(db, experiment)).plan;
}

/** Record a new run (status 'running') with its resolved config and plan; the Slurm dispatcher calls this too. */
export function createRun(db: Db, experiment: ResolvedExperiment, options: { gitSha?: string; plan?: Plan } = {}): number {
  const experimentId = ensureExperiment(db, experiment.name, experiment.filePath);
  return insertRun(db, {
    experimentId,
    servelabVersion: VERSION,
    ...(options.gitSha !== undefined && { gitSha: options.gitSha }),
    config: redactExperiment(experiment),
    plan: options.plan ?? planFor(experiment, db),
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
  return { run, experiment: storedExperimentOf(run), plan: run.plan };
}

/**
 * The experiment as the store keeps it: secrets (env values, flag values, URL passwords… see util/redact.ts) become
 * salted markers, with the experiment's own `fingerprint.redact` names on top of the defaults.
 */
export function redactExperiment(experiment: ResolvedExperiment): ResolvedExperiment {
  return JSON.parse(JSON.stringify(redactor().withPatterns(experiment.fingerprint.redact).deep(experiment))) as ResolvedExperiment;
}

/**
 * A stored run ready to launch servers again (resume, Slurm job). Secrets are not in the store, so a run whose
 * stored experiment holds markers is replayed from its experiment file, and only if that file still resolves to
 * exactly the stored experiment (same markers: same secrets): a resume never runs a different config silently.
 */
export function loadRunToExecute(db: Db, runId: number): StoredRun {
  const stored = loadRun(db, runId);
  if (!containsMarker(stored.experiment)) return stored;
  const path = stored.experiment.filePath;
  let fresh: ResolvedExperiment;
  try {
    fresh = loadExperiment(path);
  } catch (error) {
    throw new UserError(
      `run ${runId} needs its experiment file for the secrets the store does not keep: ${messageOf(error)}`,
      `restore ${path} as it was when the run started, or start a new run`,
    );
  }
  if (JSON.stringify(redactExperiment(fresh)) !== JSON.stringify(stored.experiment)) {
    throw new UserError(
      `run ${runId}: ${path} changed since the run started (the store keeps its secrets only as markers, so it must match)`,
      `restore ${path} as it was, or start a new run with \`servelab run ${path}\``,
    );
  }
  return { ...stored, experiment: fresh };
}

/**
 * Before continuing a stored run: one a drift alarm stopped continues only when the drift is accepted (else a
 * UserError); a finished one has nothing left to run and gives back its stored outcome.
 */
export function finishedOutcome(run: RunDetail, acceptDrift: boolean): RunOutcome | undefined {
  if (run.status === 'drift' && !acceptDrift) {
    throw new UserError(
      `run ${run.id} stopped on a drift alarm: ${run.message ?? ''}`,
      'fix the environment and start a new run, or resume with --accept-drift',
    );
  }
  if (run.status !== 'done') return undefined;
  return { runId: run.id, status: 'done', ...(run.verdicts !== undefined && { verdicts: storedVerdictsOf(run) }) };
}
