import { createExecutor } from '../../exec/create.js';
import type { Executor } from '../../exec/types.js';
import { servelabGitSha } from '../../fingerprint/collect.js';
import { type Db, logsBeside } from '../../store/db.js';
import { storeFault } from '../../store/fault.js';
import { acquireRunLease, type Lease, leaseNewRun, leaseStaleMs } from '../../store/lease.js';
import { listTrials, type RunDetail } from '../../store/queries.js';
import { messageOf, UserError } from '../../util/errors.js';
import { slotKey } from '../../util/trial-keys.js';
import type { Plan, ResolvedExperiment } from '../spec/types.js';
import { campaignControl } from './campaign.js';
import type { RunContext } from './context.js';
import { finalizeRun } from './finalize.js';
import { RunJournal } from './journal.js';
import type { LanesView } from './lane-status.js';
import { openLanes, runOnLanes } from './lanes.js';
import { reapLeftoverServers, remoteJobTag } from './leftovers.js';
import { createRun, finishedOutcome, loadRun, loadRunToExecute, type RunOutcome } from './run-store.js';
import { runSlurmLane, slurmLaneScope } from './slurm-lane.js';

export interface RunOptions {
  db: Db;
  /**
   * Required for a new run, which runs it as given (its secrets too: the file it came from is not read again). A
   * resume or a Slurm job replays the experiment stored with the run; given one too, it takes the secrets the store
   * does not keep from it instead of the run's file.
   */
  experiment?: ResolvedExperiment;
  /** The plan of a new run, as `servelab plan` costed it (default: planFor(experiment, db)). */
  plan?: Plan;
  /** Attach to an existing run (resume, Slurm job). */
  runId?: number;
  /**
   * Run this lane of the run (its index in the experiment's lanes, 0 without `lanes:`) in this process and leave the
   * run open: a Slurm lane's job, which claims blocks from the store beside the other lanes' jobs (slurm-lane.ts).
   */
  lane?: number;
  /** Record and continue past drift alarms. */
  acceptDrift?: boolean;
  /** Measure although the configuration differs from the reference run's (reference-guard.ts). */
  acceptEnvChange?: boolean;
  /** Default: createExecutor(experiment.executor). */
  executor?: Executor;
  /** Server logs go to <workDir>/run-<id>/ (default: `logs/` beside the store). */
  workDir?: string;
  signal?: AbortSignal;
  /** Progress lines (the CLI writes them to stderr). */
  log?: (line: string) => void;
  /** Each lane's live state, at every change (several lanes only; the CLI draws it: cli/lane-progress.ts). */
  onLanes?: (view: LanesView) => void;
}

export type { RunOutcome } from './run-store.js';

/**
 * Execute (or continue) a run: start each server config once per stretch of the plan, measure its trials, store
 * each finished trial at once, stop on a drift alarm, and finalize when every trial is in.
 */
export async function runExperiment(options: RunOptions): Promise<RunOutcome> {
  const { db } = options;
  const log = options.log ?? (() => {});
  let runId = options.runId;
  let lease: Lease;
  if (runId === undefined) {
    const { experiment } = options;
    if (!experiment) throw new Error('runExperiment needs an experiment or a runId');
    const gitSha = await servelabGitSha();
    const create = () => createRun(db, experiment, { ...(gitSha !== undefined && { gitSha }), ...(options.plan && { plan: options.plan }) });
    ({ runId, lease } = leaseNewRun(db, create, { log }));
    log(`run ${runId}: ${experiment.name}`);
  } else {
    const { run, experiment } = loadRun(db, runId);
    const finished = finishedOutcome(run, options.acceptDrift ?? false);
    if (finished) return finished;
    if (options.lane !== undefined && options.lane >= (experiment.lanes?.length ?? 1)) {
      throw new UserError(`run ${runId} has no lane ${options.lane}`, `pass a lane index below ${experiment.lanes?.length ?? 1} (from 0)`);
    }
    // One runner per run (per lane for a Slurm lane's job): a second `--resume` of the same run refuses here instead
    // of measuring the same trials. A Slurm job may be the resubmission of one killed a moment ago: it waits for that
    // lease to go stale.
    const scope = options.lane === undefined ? '*' : slurmLaneScope(options.lane);
    lease = await acquireRunLease(db, runId, scope, { log, ...(options.lane !== undefined && { waitMs: leaseStaleMs() + 5_000 }) });
  }
  try {
    return await runLeased(options, runId, lease, log);
  } finally {
    lease.release();
  }
}

async function runLeased(options: RunOptions, runId: number, lease: Lease, log: (line: string) => void): Promise<RunOutcome> {
  const { db } = options;
  // Read again under the lease: the runner we took over may have stored trials or finished meanwhile.
  const { run } = loadRun(db, runId);
  const finished = finishedOutcome(run, options.acceptDrift ?? false);
  if (finished) return finished;
  const journal = new RunJournal(db, runId, lease);
  // From here on, whatever stops the runner is written on the run: no throw leaves its row `running`.
  try {
    return await measureRun(options, runId, journal, run, log);
  } catch (error) {
    return failedRun(options, journal, runId, error);
  }
}

async function measureRun(options: RunOptions, runId: number, journal: RunJournal, run: RunDetail, log: (line: string) => void): Promise<RunOutcome> {
  const { db } = options;
  const { experiment, plan } = loadRunToExecute(db, runId, options.experiment);
  const done = new Set(listTrials(db, runId).map(slotKey));
  const pending = plan.trials.filter((trial) => !done.has(slotKey(trial)));
  if (done.size > 0 && options.lane === undefined) log(`run ${runId}: ${done.size} of ${plan.trials.length} trials already measured; ${pending.length} to go`);

  const workDir = options.workDir ?? logsBeside(db);
  const executor = options.executor ?? (await createExecutor(experiment.executor, { workDir, jobTag: remoteJobTag(db, runId) }));
  const context: RunContext = {
    db,
    runId,
    experiment,
    executor,
    journal,
    workDir,
    // Ctrl-C, and a lost lease: either stops the trial in flight at once.
    signal: options.signal ? AbortSignal.any([options.signal, journal.signal]) : journal.signal,
    acceptDrift: options.acceptDrift ?? false,
    acceptEnvChange: options.acceptEnvChange ?? false,
    log,
  };
  try {
    await reapLeftoverServers(db, runId, executor, journal, { ...(options.lane !== undefined && { lane: options.lane }), log });
    // A Slurm lane's job leaves the run's status to its dispatcher.
    if (run.status !== 'running' && options.lane === undefined) journal.runStatus('running');
    // Campaign hook (race eliminations, budget stop) between stretches; Slurm lanes run the plan as planned.
    const campaign = options.lane === undefined ? campaignControl(db, journal, experiment, plan, run.startedAt, log) : undefined;
    const abortLanes = new AbortController();
    const live = options.onLanes && { measuredBefore: done.size, onChange: options.onLanes };
    const { lanes, close } = await openLanes(context, plan, abortLanes.signal, live, options.lane);
    try {
      const stop = options.lane === undefined ? await runOnLanes(lanes, pending, campaign, abortLanes, log) : await runSlurmLane(lanes[0]!, plan);
      if (stop) {
        journal.runStatus('drift', stop);
        return { runId, status: 'drift', message: stop };
      }
    } finally {
      await close();
    }
  } finally {
    if (!options.executor) await executor.close();
  }
  if (options.lane !== undefined) return { runId, status: 'running', message: `${context.experiment.lanes?.[options.lane]?.name ?? 'the lane'} finished` };
  return finalizeRun(db, runId, journal.fence);
}

/**
 * A run that stopped early: interrupted (a resume continues it), or failed. A lost lease or a heartbeat that could
 * not write is the cause of whatever error it provoked in the trial, so it is the one reported.
 */
function failedRun(options: RunOptions, journal: RunJournal, runId: number, error: unknown): RunOutcome {
  const interrupted = options.signal?.aborted ?? false;
  const cause = !interrupted && journal.signal.aborted ? journal.signal.reason : error;
  const fault = storeFault(cause);
  const message = interrupted ? 'interrupted; measured trials are kept' : messageOf(fault);
  try {
    // A Slurm lane's job ending early is no end of the run: the other lanes take its trials, the dispatcher decides.
    if (options.lane === undefined) journal.runStatus(interrupted ? 'interrupted' : 'failed', message);
  } catch {
    // The store itself is failing (locked, full) or the run is another runner's now: the status stays as it is.
  }
  if (interrupted) return { runId, status: 'interrupted', message };
  if (fault !== cause && fault instanceof UserError) {
    throw new UserError(fault.message, `${fault.hint}: \`servelab run --resume ${runId}\` (measured trials are kept)`);
  }
  throw fault;
}
