import { type Command, InvalidArgumentError } from 'commander';
import { loadCostModel } from '../../experiment/plan/budget.js';
import { type BisectRequest, prepareBisect, runBisect } from '../../experiment/run/bisect.js';
import { METRIC_NAMES, type MetricName, type ResolvedExperiment } from '../../experiment/spec/types.js';
import { formatBisect, formatBisectPlan } from '../../experiment/text/bisect-format.js';
import { defaultStorePath, openStore } from '../../store/db.js';
import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { terminalText } from '../../util/terminal-text.js';
import { simulatorDeclaredCosts } from '../sim-costs.js';

interface BisectFlags {
  store?: string;
  metric?: MetricName;
  against?: number;
  variant?: string;
  workload?: string;
  tolerance?: number;
  trials?: number;
  maxTrials?: number;
  dryRun?: boolean;
  json?: boolean;
}

function runId(value: string): number {
  const id = Number(value);
  if (!Number.isInteger(id) || id < 1) throw new InvalidArgumentError('expected a run id (a positive integer; `servelab ls` lists them)');
  return id;
}

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new InvalidArgumentError('expected a positive integer');
  return number;
}

function metricName(value: string): MetricName {
  if (!(METRIC_NAMES as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${METRIC_NAMES.join(', ')}`);
  return value as MetricName;
}

/** `5%` or `0.05`. */
function tolerance(value: string): number {
  const percent = value.endsWith('%');
  const number = Number(percent ? value.slice(0, -1) : value);
  const fraction = percent ? number / 100 : number;
  if (!(fraction > 0 && fraction < 1)) throw new InvalidArgumentError('expected a relative change such as 5% or 0.05');
  return fraction;
}

export function registerBisect(program: Command): void {
  program
    .command('bisect')
    .description(
      'which of the settings that changed between two runs cost the speed: a screening design over the differences, every effect fitted from all trials',
    )
    .argument('<run>', 'the slower run (stopped by the reference guard or a drift alarm, or any run of the experiment)', runId)
    .option('--against <run>', 'the reference run (default: the last finished run of the experiment before RUN)', runId)
    .option('--store <path>', 'result store (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .option('--variant <name>', "the variant whose server is compared (default: the experiment's baseline)")
    .option('--workload <label>', "the workload measured (default: the experiment's first)")
    .option('--metric <name>', "the metric whose change is explained (default: the file's metric)", metricName)
    .option('--tolerance <change>', "smallest change a setting must cause to be named, e.g. 5% (default: the file's verdict.minEffect, at least 2%)", tolerance)
    .option('--trials <n>', "precision: each effect as precise as N trials per arm one at a time (default: the file's trials, at least 6)", positiveInteger)
    .option('--max-trials <n>', 'budget: do not start a round that would pass this many trials in all', positiveInteger)
    .option('--dry-run', 'print the differences, the design and the predicted cost, and measure nothing')
    .option('--json', 'print the answer as JSON on stdout')
    .action(async (current: number, flags: BisectFlags) => {
      const storePath = defaultStorePath(flags.store);
      const db = openStore(storePath);
      const controller = new AbortController();
      const onSignal = (): void => {
        if (controller.signal.aborted) process.exit(ExitCode.interrupted);
        process.stderr.write('\nstopping: the trial in flight is dropped, measured rounds are kept (Ctrl-C again to quit at once)\n');
        controller.abort();
      };
      const log = (line: string): void => void process.stderr.write(`${terminalText(line)}\n`);
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        const request: BisectRequest = {
          db,
          currentRunId: current,
          ...(flags.against !== undefined && { referenceRunId: flags.against }),
          ...(flags.variant !== undefined && { variant: flags.variant }),
          ...(flags.workload !== undefined && { workload: flags.workload }),
          ...(flags.metric !== undefined && { metric: flags.metric }),
          ...(flags.tolerance !== undefined && { tolerance: flags.tolerance }),
          ...(flags.trials !== undefined && { trials: flags.trials }),
          ...(flags.maxTrials !== undefined && { maxTrials: flags.maxTrials }),
          costs: (experiment: ResolvedExperiment) => loadCostModel(db, experiment, simulatorDeclaredCosts),
        };
        const prepared = prepareBisect(request, { dryRun: flags.dryRun ?? false, log });
        const planText = formatBisectPlan(prepared.bisect.setup, prepared.prediction, prepared.labels);
        if (flags.dryRun) {
          process.stdout.write(`${terminalText(planText)}\n`);
          return;
        }
        log(prepared.resumed ? `bisect ${prepared.bisect.id}: continuing (the same command resumes it)` : `bisect ${prepared.bisect.id}`);
        log(planText);
        const outcome = await runBisect(db, prepared, request, { signal: controller.signal, log, storePath });
        const text = formatBisect(outcome.bisectId, outcome.view, prepared.labels);
        process.stdout.write(flags.json ? `${JSON.stringify(outcome, null, 2)}\n` : `${terminalText(text)}\n`);
        switch (outcome.status) {
          case 'done':
            return;
          case 'interrupted':
            process.stderr.write(`bisect ${outcome.bisectId} interrupted; run the same command to continue\n`);
            process.exitCode = ExitCode.interrupted;
            return;
          default:
            throw new UserError(
              `bisect ${outcome.bisectId} stopped: ${outcome.message ?? outcome.status}`,
              outcome.status === 'stopped' ? 'the measured rounds are kept' : 'fix the cause, then run the same command: measured rounds are kept',
            );
        }
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        db.close();
      }
    });
}
