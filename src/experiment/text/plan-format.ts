import { formatDuration, formatNumber } from '../../util/format.js';
import type { Estimate } from '../plan/budget.js';
import { limitViolations, type ScheduleChoice } from '../plan/schedule.js';
import type { ResolvedExperiment } from '../spec/types.js';
import { table } from './format.js';

/** `servelab plan` / `run --dry-run`: the schedule, its trade-off, per-config costs and the budget check. */
export function formatPlanChoice(experiment: ResolvedExperiment, choice: ScheduleChoice): string {
  const { plan, prediction } = choice;
  const lines = [
    `plan for ${experiment.name}: ${plan.trials.length} trials = ${experiment.variants.length} variants × ${experiment.workloads.length} workloads × ${experiment.trials} repetitions` +
      (experiment.stopping === 'race' ? ' (a cap: stopping: race ends earlier once a winner is clear)' : ''),
    `schedule: ${choice.schedule}, ${plan.blocks} ${plan.blocks === 1 ? 'pass' : 'passes'}, ${prediction.configs.length} server configs, ${plan.restarts} restarts — ${choice.reason}`,
    '',
    'trade-off (drift protection vs restart cost):',
    table(
      ['schedule', 'passes', 'restarts', 'startups', 'measuring', 'wall time', 'GPU-hours'],
      choice.options.map((option) => [
        option.schedule + (option.schedule === choice.schedule ? ' *' : ''),
        String(option.plan.blocks),
        String(option.prediction.restarts),
        formatDuration(option.prediction.startupTotalMs),
        formatDuration(option.prediction.measureMs),
        formatDuration(option.prediction.wallMs),
        gpuHoursText(option.prediction.gpuHours),
      ]),
    ),
    '',
    'server configs:',
    table(
      ['config', 'variants', 'starts', 'trials', 'startup each', 'measuring'],
      prediction.configs.map((config) => [
        config.serverKey.slice(0, 8),
        config.variants.join(', '),
        String(config.starts),
        String(config.trials),
        estimateText(config.startupMs),
        formatDuration(config.measureMs),
      ]),
    ),
    '',
    `predicted: ${formatDuration(prediction.wallMs)} wall time, ${gpuHoursText(prediction.gpuHours)} GPU-hours (${prediction.gpusPerServer} GPU${prediction.gpusPerServer === 1 ? '' : 's'} per server)` +
      (prediction.usesDefaults ? '; "default" figures have no history in the store yet' : "; from the store's history"),
  ];
  const violations = limitViolations(experiment, prediction);
  if (experiment.budget || experiment.maxRestarts !== undefined) {
    lines.push(violations.length === 0 ? 'budget: within every limit' : `budget: OVER ${violations.join('; ')}`);
  }
  return lines.join('\n');
}

function estimateText(estimate: Estimate): string {
  return estimate.source === 'history' ? `${formatDuration(estimate.ms)} (median of ${estimate.samples} startups)` : `${formatDuration(estimate.ms)} (default)`;
}

export function gpuHoursText(gpuHours: number): string {
  return formatNumber(gpuHours);
}
