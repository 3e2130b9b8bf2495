import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { loadCostModel } from '../../experiment/plan/budget.js';
import { chooseSchedule, limitViolations, type ScheduleChoice } from '../../experiment/plan/schedule.js';
import { significanceWarning } from '../../experiment/plan/significance.js';
import { loadExperiment } from '../../experiment/spec/load.js';
import type { ResolvedExperiment } from '../../experiment/spec/types.js';
import { formatPlanChoice } from '../../experiment/text/plan-format.js';
import { defaultStorePath, openStore } from '../../store/db.js';
import { UserError } from '../../util/errors.js';
import { terminalText } from '../../util/terminal-text.js';
import { simulatorDeclaredCosts } from '../sim-costs.js';

/** Where `run --help` and `plan --help` send a user who writes an experiment file. */
export const EXPERIMENT_FILE_HELP =
  'The experiment file: every key with its type, default and an example, workload kinds and names, placeholders,\nhow variants merge, metric names: docs/experiment-file.md (in the servelab package and repository).';

export function registerPlan(program: Command): void {
  program
    .command('plan')
    .addHelpText('after', `\n${EXPERIMENT_FILE_HELP}`)
    .description("show an experiment's schedule, restarts, predicted wall time and GPU-hours, and the budget check")
    .argument('<file>', 'experiment file (YAML)')
    .option('--store <path>', 'result store the costs are predicted from (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .option('--json', 'machine-readable output')
    .action((file: string, flags: { store?: string; json?: boolean }) => {
      const experiment = loadExperiment(file);
      const choice = costedPlan(experiment, flags.store);
      const significance = significanceWarning(experiment, choice.schedule === 'blocked');
      const json = { ...choice, ...(significance && { warnings: [significance] }) };
      process.stdout.write(`${flags.json ? JSON.stringify(json, null, 2) : terminalText(formatPlanChoice(experiment, choice))}\n`);
    });
}

/** The schedule and plan an experiment gets, costed from the store when there is one (a missing store: defaults). */
export function costedPlan(experiment: ResolvedExperiment, storeOption: string | undefined): ScheduleChoice {
  const path = defaultStorePath(storeOption);
  const db = existsSync(path) ? openStore(path) : undefined;
  try {
    return chooseSchedule(experiment, loadCostModel(db, experiment, simulatorDeclaredCosts));
  } finally {
    db?.close();
  }
}

/** `run` refuses a plan over its budget or restart limit unless forced. */
export function enforceLimits(experiment: ResolvedExperiment, choice: ScheduleChoice, force: boolean): void {
  const violations = limitViolations(experiment, choice.prediction);
  if (violations.length === 0 || force) return;
  throw new UserError(
    `the plan exceeds ${violations.join(' and ')}`,
    `see \`servelab plan ${experiment.filePath}\`; raise the budget, cut trials or variants, choose \`schedule: blocked\`, or run with --force`,
  );
}
