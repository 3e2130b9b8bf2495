import type { Command } from 'commander';
import type { ExecutorConfig } from '../../exec/types.js';
import { loadCostModel } from '../../experiment/plan/budget.js';
import { chooseSchedule } from '../../experiment/plan/schedule.js';
import { campaignSummary } from '../../experiment/run/campaign-report.js';
import { checkResumeFile } from '../../experiment/run/resume-check.js';
import { loadRun } from '../../experiment/run/run-store.js';
import { type RunOutcome, runExperiment } from '../../experiment/run/runner.js';
import { runOnSlurm } from '../../experiment/run/slurm.js';
import { loadExperiment } from '../../experiment/spec/load.js';
import type { Plan, ResolvedExperiment } from '../../experiment/spec/types.js';
import { formatSearchPoints, formatVerdicts } from '../../experiment/text/format.js';
import { formatLaneReport } from '../../experiment/text/lane-format.js';
import { formatPlanChoice, plannedRestarts, predictedText, sourcesNote } from '../../experiment/text/plan-format.js';
import { conclusionJson, loadConclusion } from '../../report/queries.js';
import { type Db, defaultStorePath, openStore } from '../../store/db.js';
import { latestUnfinishedRun } from '../../store/queries.js';
import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { terminalText } from '../../util/terminal-text.js';
import { laneProgress } from '../lane-progress.js';
import { simulatorDeclaredCosts } from '../sim-costs.js';
import { EXPERIMENT_FILE_HELP, enforceLimits } from './plan.js';

type SlurmConfig = Extract<ExecutorConfig, { kind: 'slurm' }>;

interface RunFlags {
  store?: string;
  resume?: string | boolean;
  acceptDrift?: boolean;
  acceptEnvChange?: boolean;
  runId?: string;
  lane?: string;
  json?: boolean;
  dryRun?: boolean;
  force?: boolean;
  useStored?: boolean;
}

export function registerRun(program: Command): void {
  program
    .command('run')
    .description('run an experiment file: interleaved trials of every variant, drift alarm, verdicts vs the baseline')
    .addHelpText('after', `\n${EXPERIMENT_FILE_HELP}`)
    .argument('[file]', 'experiment file (YAML)')
    .option('--store <path>', 'result store (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .option('--resume [runId]', "continue an unfinished run (default: the latest unfinished run of FILE's experiment)")
    .option('--use-stored', 'with --resume: run the experiment the store kept even though the file changed since')
    .option('--accept-drift', 'record and continue when the baseline moved away from its history')
    .option('--accept-env-change', "measure although the servers' configuration (env, args, packages, driver, GPUs…) differs from the last finished run's")
    .option('--run-id <n>', 'attach to an existing run (used by Slurm jobs)')
    .option('--lane <n>', "run this lane of the run (from 0) beside the other lanes' jobs and leave the run open (used by Slurm jobs)")
    .option('--json', 'print the outcome as JSON on stdout')
    .option('--dry-run', 'print the plan (schedule, restarts, predicted wall time and GPU-hours) and run nothing')
    .option('--force', 'run even when the plan exceeds the budget or maxRestarts of the experiment file')
    .action(async (file: string | undefined, flags: RunFlags) => {
      const storePath = defaultStorePath(flags.store);
      const db = openStore(storePath);
      if (flags.dryRun) {
        try {
          if (file === undefined) throw new UserError('--dry-run needs an experiment file', 'run `servelab run FILE --dry-run`', ExitCode.usage);
          const experiment = loadExperiment(file);
          process.stdout.write(`${formatPlanChoice(experiment, chooseSchedule(experiment, loadCostModel(db, experiment, simulatorDeclaredCosts)))}\n`);
          return;
        } finally {
          db.close();
        }
      }
      const controller = new AbortController();
      const onSignal = (): void => {
        if (controller.signal.aborted) process.exit(ExitCode.interrupted);
        process.stderr.write('\nstopping: the trial in flight is dropped, measured trials are kept (Ctrl-C again to quit at once)\n');
        controller.abort();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      // On lanes, each lane's state under the log (a terminal) or a line now and then (a log file): cli/lane-progress.ts.
      const lanes = laneProgress();
      const log = (line: string): void => lanes.log(terminalText(line));
      try {
        const { slurm, ...target } = resolveTarget(db, file, flags);
        const acceptDrift = flags.acceptDrift ?? false;
        const acceptEnvChange = flags.acceptEnvChange ?? false;
        let plan: Plan | undefined;
        if (target.experiment) {
          const choice = chooseSchedule(target.experiment, loadCostModel(db, target.experiment, simulatorDeclaredCosts));
          enforceLimits(target.experiment, choice, flags.force ?? false);
          log(
            `plan: ${choice.schedule}, ${choice.plan.trials.length} trials, ${plannedRestarts(choice)} restarts, predicted ${predictedText(choice.prediction)} (${choice.reason})${sourcesNote(choice.prediction)}`,
          );
          plan = choice.plan;
        }
        const outcome = slurm
          ? (
              await runOnSlurm({
                ...slurm,
                ...(target.runId !== undefined && { runId: target.runId }),
                storePath,
                acceptDrift,
                acceptEnvChange,
                signal: controller.signal,
                log,
              })
            ).outcome
          : await runExperiment({
              db,
              ...target,
              ...(plan && { plan }),
              ...(flags.lane !== undefined && { lane: laneIndex(flags.lane) }),
              acceptDrift,
              acceptEnvChange,
              signal: controller.signal,
              log,
              onLanes: lanes.update,
            });
        lanes.finish();
        report(db, outcome, flags.json ?? false);
      } finally {
        lanes.finish();
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        db.close();
      }
    });
}

interface Target {
  /** A new run of this experiment. */
  experiment?: ResolvedExperiment;
  /** An existing run to continue. */
  runId?: number;
  /** Set when this command dispatches the run to Slurm instead of running its servers here. */
  slurm?: { config: SlurmConfig; experimentPath: string };
}

/**
 * New run from FILE, or an existing run (--run-id, --resume) whose stored experiment and plan are replayed. A
 * resume first checks that FILE (or the file the run came from) still is the stored experiment (resume-check.ts).
 */
function resolveTarget(db: Db, file: string | undefined, flags: RunFlags): Target {
  if (flags.useStored && flags.resume === undefined)
    throw new UserError('--use-stored only applies to a resume', 'run `servelab run --resume RUN_ID --use-stored`', ExitCode.usage);
  const explicitId = flags.runId ?? (typeof flags.resume === 'string' ? flags.resume : undefined);
  if (explicitId !== undefined) {
    const runId = Number(explicitId);
    if (!Number.isInteger(runId) || runId < 1)
      throw new UserError(`run id must be a positive integer, got "${explicitId}"`, 'see run ids with `servelab ls`', ExitCode.usage);
    const { experiment } = loadRun(db, runId);
    // A Slurm job (--run-id) runs what its dispatcher checked; a resume checks here.
    if (flags.runId === undefined) checkResume(runId, experiment, file, flags);
    return { runId, ...slurmDispatch(experiment, flags) };
  }
  if (file === undefined) throw new UserError('no experiment file given', 'run `servelab run FILE`, or `servelab run --resume RUN_ID`', ExitCode.usage);
  const experiment = loadExperiment(file);
  if (flags.lane !== undefined) throw new UserError('--lane needs --run-id', 'pass the run id the Slurm dispatcher created', ExitCode.usage);
  if (flags.resume === true) {
    const run = latestUnfinishedRun(db, experiment.name);
    if (!run) throw new UserError(`no unfinished run of experiment "${experiment.name}" to resume`, `start a new one with \`servelab run ${file}\``);
    process.stderr.write(`resuming run ${run.id} (${run.status}, ${run.trialCount} trials measured)\n`);
    const stored = loadRun(db, run.id).experiment;
    checkResume(run.id, stored, file, flags);
    return { runId: run.id, ...slurmDispatch(stored, flags) };
  }
  return { experiment, ...slurmDispatch(experiment, flags) };
}

/** The stored experiment is what runs: refuse when the file differs from it, unless --use-stored says so. */
function checkResume(runId: number, stored: ResolvedExperiment, file: string | undefined, flags: RunFlags): void {
  if (flags.useStored) {
    process.stderr.write(`run ${runId}: running the experiment the store kept (--use-stored)\n`);
    return;
  }
  const note = checkResumeFile(runId, stored, file);
  if (note !== undefined) process.stderr.write(`${note}\n`);
}

/**
 * A Slurm experiment becomes one job per lane (new or resumed: the jobs take the trials still missing); each job runs
 * this command with --run-id/--lane and runs its lane on its node.
 */
function slurmDispatch(experiment: ResolvedExperiment, flags: RunFlags): Pick<Target, 'slurm'> {
  if (experiment.executor.kind !== 'slurm' || flags.lane !== undefined) return {};
  return { slurm: { config: experiment.executor, experimentPath: experiment.filePath } };
}

function laneIndex(text: string): number {
  const lane = Number(text);
  if (!Number.isInteger(lane) || lane < 0)
    throw new UserError(`--lane must be a lane index from 0, got "${text}"`, 'see the lanes with `servelab plan FILE`', ExitCode.usage);
  return lane;
}

function report(db: Db, outcome: RunOutcome, json: boolean): void {
  const { run, plan, experiment } = loadRun(db, outcome.runId);
  // A done run's JSON carries its conclusion as `show --json` prints it.
  const conclusion = outcome.status === 'done' ? loadConclusion(db, run, { verdicts: outcome.verdicts ?? [], ranking: true }) : undefined;
  // A search run has no verdicts against its space's first point: its answer is the conclusion's `search`.
  const { verdicts: _verdicts, ...searchOutcome } = outcome;
  if (json)
    process.stdout.write(`${JSON.stringify({ ...(experiment.search ? searchOutcome : outcome), ...(conclusion && conclusionJson(conclusion)) }, null, 2)}\n`);
  switch (outcome.status) {
    case 'done':
      if (!json && conclusion) {
        const verdicts = formatVerdicts(conclusion, plan.schedule === 'blocked', (experiment.lanes?.length ?? 1) > 1);
        const laneText = conclusion.lanes ? `\n\n${formatLaneReport(conclusion.lanes).join('\n')}` : '';
        // A search's answer (in the campaign text) is its best config per level, not verdicts against its first point:
        // its decisions per point stand where verdicts would, as `show` prints them.
        const head = experiment.search ? (conclusion.search ? `${formatSearchPoints(conclusion.search).join('\n')}\n\n` : '') : `${verdicts}${laneText}\n\n`;
        process.stdout.write(terminalText(`run ${outcome.runId} done\n${head}${campaignSummary(db, outcome.runId, conclusion)}\n`));
      }
      return;
    case 'drift':
      throw new UserError(
        `run ${outcome.runId} stopped: ${outcome.message ?? 'drift alarm'}`,
        `restore the environment and run again, or \`servelab run --resume ${outcome.runId} --accept-drift\` to record it anyway`,
      );
    case 'interrupted':
      process.stderr.write(`run ${outcome.runId} interrupted; continue with \`servelab run --resume ${outcome.runId}\`\n`);
      process.exitCode = ExitCode.interrupted;
      return;
    case 'failed':
      throw new UserError(
        `run ${outcome.runId} failed: ${outcome.message ?? 'not every trial was measured'}`,
        `the measured trials are kept: fix the cause, then \`servelab run --resume ${outcome.runId}\``,
      );
    default:
      // A Slurm job's share is done; the dispatcher finalizes the run.
      process.stderr.write(terminalText(`run ${outcome.runId}: ${outcome.message ?? outcome.status}\n`));
  }
}
