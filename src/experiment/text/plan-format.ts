import { formatGpuTime, formatNumber, formatPredicted } from '../../util/format.js';
import { searchBudgetSeconds, searchObjective, searchRunOf } from '../analysis/search.js';
import type { Estimate, PlanPrediction } from '../plan/budget.js';
import { limitViolations, type ScheduleChoice, uncheckedBudget } from '../plan/schedule.js';
import { significanceWarning } from '../plan/significance.js';
import { DEFAULT_BLOCK_SIZE, firstBlockSize } from '../search/strategy.js';
import type { ResolvedExperiment } from '../spec/types.js';
import { table } from './format.js';
import { shareText } from './search-format.js';

/** `servelab plan` / `run --dry-run`: the schedule, its trade-off, per-config costs and the budget check. */
export function formatPlanChoice(experiment: ResolvedExperiment, choice: ScheduleChoice): string {
  if (experiment.search) return formatSearchPlan(experiment, choice);
  const { plan, prediction } = choice;
  const lines = [
    `plan for ${experiment.name}: ${plan.trials.length} trials = ${experiment.variants.length} variants × ${experiment.workloads.length} workloads × ${experiment.trials} repetitions` +
      (experiment.stopping === 'race' ? ' (a cap: stopping: race ends earlier once a winner is clear)' : ''),
    `schedule: ${choice.schedule}, ${plan.blocks} ${plan.blocks === 1 ? 'block' : 'blocks'}, ${prediction.configs.length} server configs, ${plannedRestarts(choice)} restarts — ${choice.reason}`,
    '',
    'trade-off (drift protection vs restart cost):',
    table(
      ['schedule', 'blocks', 'restarts', 'startups', 'measuring', 'wall time', 'GPU-hours'],
      choice.options.map((option) => [
        option.schedule + (option.schedule === choice.schedule ? ' *' : ''),
        String(option.plan.blocks),
        String(option.prediction.restarts),
        formatPredicted(option.prediction.startupTotalMs),
        formatPredicted(option.prediction.measureMs),
        formatPredicted(option.prediction.wallMs),
        gpuHoursText(option.prediction.gpuHours),
      ]),
    ),
    '',
    'server configs:',
    table(
      ['config', 'variants', 'starts', 'trials', 'startup each', 'measuring', 'trial figures'],
      prediction.configs.map((config) => [
        config.serverKey.slice(0, 8),
        config.variants.join(', '),
        String(config.starts),
        String(config.trials),
        estimateText(config.startupMs),
        formatPredicted(config.measureMs),
        config.trialSources.map((source) => SOURCE_WORDS[source]).join(', '),
      ]),
    ),
    ...laneTable(prediction),
    '',
    `predicted: ${predictedText(prediction)}, ${prediction.gpusPerServer} GPU${prediction.gpusPerServer === 1 ? '' : 's'} per server${sourcesNote(prediction)}`,
  ];
  if (prediction.measureMs === undefined) lines.push(...unknownLengthNotes(experiment));
  const significance = significanceWarning(experiment, choice.schedule === 'blocked');
  if (significance) lines.push(`warning: ${significance}`);
  const violations = limitViolations(experiment, prediction);
  if (experiment.budget || experiment.maxRestarts !== undefined) {
    const unchecked = uncheckedBudget(experiment, prediction);
    lines.push(violations.length > 0 ? `budget: OVER ${violations.join('; ')}` : unchecked ? `budget: ${unchecked}` : 'budget: within every limit');
  }
  return lines.join('\n');
}

/** Restarts the chosen plan needs: the plan's own on one lane; on lanes, the starts after each lane's first. */
export function plannedRestarts(choice: Pick<ScheduleChoice, 'plan' | 'prediction'>): number {
  return choice.prediction.lanes === undefined ? choice.plan.restarts : choice.prediction.restarts;
}

/**
 * Why trial lengths are unknown without history, per variant whose prompts no declared figure can price: their
 * lengths come from a file (a dataset, sessions from a ShareGPT file) or a trace's timestamps, read only by the run.
 */
function unknownLengthNotes(experiment: ResolvedExperiment): string[] {
  const notes: string[] = [];
  for (const variant of experiment.variants) {
    const prompts = variant.client.prompts;
    const what =
      prompts.kind === 'synthetic' || (prompts.kind === 'sessions' && prompts.path === undefined)
        ? undefined
        : prompts.kind === 'sessions'
          ? `its sessions come from ${prompts.path}, whose turns' lengths are known only once read`
          : prompts.kind === 'shared-prefix'
            ? 'shared-prefix prompts have no declared-speed model yet'
            : `its ${prompts.kind} prompts' lengths are known only once read`;
    if (what) notes.push(`note: ${variant.name}'s trial lengths are unknown until a run records them: ${what}`);
  }
  const traced = experiment.workloads.filter(({ workload }) => workload.kind === 'trace').map(({ label }) => label);
  if (traced.length > 0) notes.push(`note: ${traced.join(', ')}: a trace's length is its recorded arrivals, known once read`);
  return notes;
}

const SOURCE_WORDS: Record<Estimate['source'], string> = {
  history: "store's history",
  declared: "the server's declared speed",
  typical: "the engine's typical figure",
  unknown: 'unknown',
};

function estimateText(estimate: Estimate): string {
  switch (estimate.source) {
    case 'history':
      return `${formatPredicted(estimate.ms)} (median of ${estimate.samples} startups)`;
    case 'declared':
    case 'typical':
      return `${formatPredicted(estimate.ms)} (${estimate.basis})`;
    case 'unknown':
      return 'unknown (no history)';
  }
}

/** The first line of `run` and the last of `plan`: wall time and GPU-hours, or what is unknown. */
export function predictedText(prediction: PlanPrediction): string {
  if (prediction.wallMs === undefined) {
    const known = prediction.startupTotalMs !== undefined ? `startups ${formatPredicted(prediction.startupTotalMs)}` : undefined;
    return `wall time unknown${known ? ` (${known}; trial lengths unknown)` : ''}`;
  }
  return `${formatPredicted(prediction.wallMs)} wall time${slowestLaneText(prediction)}, ${gpuHoursText(prediction.gpuHours)} GPU-hours`;
}

/**
 * " (the slowest of 2 lanes: lane2, 3 starts and 4 trials; 6 starts in all, 2 more than one lane needs)": what the
 * wall time is the time of, and the starts lanes add (a config whose blocks go to several lanes starts on each).
 */
function slowestLaneText(prediction: PlanPrediction): string {
  const shares = prediction.laneShares;
  if (prediction.lanes === undefined || shares === undefined) return '';
  const slowest = shares.reduce((a, b) => ((b.ms ?? 0) > (a.ms ?? 0) ? b : a));
  const extra = prediction.starts - (prediction.oneLaneStarts ?? prediction.starts);
  const more = extra > 0 ? `, ${extra} more than one lane needs` : '';
  return ` (the slowest of ${prediction.lanes} lanes: ${slowest.name}, ${slowest.starts} starts and ${slowest.trials} trials; ${prediction.starts} starts in all${more})`;
}

/** `plan`'s per-lane table: each lane's starts, trials and busy time (the wall time is the slowest's). */
function laneTable(prediction: PlanPrediction): string[] {
  if (prediction.laneShares === undefined) return [];
  return [
    '',
    'lanes (each runs whole blocks; the wall time is the slowest lane):',
    table(
      ['lane', 'starts', 'trials', 'busy'],
      prediction.laneShares.map((share) => [share.name, String(share.starts), String(share.trials), formatPredicted(share.ms)]),
    ),
  ];
}

/** Where the figures come from, when not all from history ("; …"), so no prediction passes for a measurement. */
export function sourcesNote(prediction: PlanPrediction): string {
  const sources = prediction.sources;
  const fromHistory = sources.length === 1 && sources[0] === 'history';
  const parts = [
    fromHistory && "from the store's history",
    !fromHistory && sources.includes('declared') && "the server's declared speed (its flags) where there is no history",
    !fromHistory && sources.includes('typical') && "the engine's typical startup where there is no history (not a measurement of yours)",
    !fromHistory && sources.includes('unknown') && 'unknown where there is neither history nor a declared figure: a first run records them',
    prediction.uncountedPasses && `not counted, at every start: ${prediction.uncountedPasses.join(', ')}`,
  ].filter((part): part is string => typeof part === 'string');
  return parts.length === 0 ? '' : `; ${parts.join('; ')}`;
}

export function gpuHoursText(gpuHours: number | undefined): string {
  return gpuHours === undefined ? 'unknown' : formatNumber(gpuHours);
}

/** `servelab plan` of a search: the space, its constraints, the cost of one point measured, the grid, the budget. */
export function formatSearchPlan(experiment: ResolvedExperiment, choice: ScheduleChoice): string {
  const run = searchRunOf(experiment)!;
  const { search, space } = run;
  const grid = choice.options[0]!.prediction;
  const levels = experiment.workloads.map((workload) => workload.label);
  const lines = [
    `search plan for ${experiment.name}: ${space.points.length} valid points of ${search.combinations} combinations, each measured at ${levels.length} level${levels.length === 1 ? '' : 's'} (${levels.join(', ')}) per block`,
    ...search.knobs.map((knob) => `  ${knob.name}: ${knob.values.join(', ')}${knob.log ? ' (log scale)' : ''}`),
    ...search.constraints.map((constraint) => `  constraint: ${constraint}`),
    `objective: ${searchObjective(experiment).direction} ${searchObjective(experiment).metric}; tolerance ${shareText(search.tolerance)}, confidence ${shareText(search.confidence)}${search.tieBreak.length > 0 ? `; tie-break ${search.tieBreak.map((entry) => (entry.kind === 'knob' ? `${entry.name}${entry.descending ? ' desc' : ''}` : entry.metric)).join(', ')}` : ''}`,
  ];
  const first = firstBlockSize(space.points.length, {});
  lines.push(
    `design: block 1 measures ${first} points spread over the space (maximin), then up to ${DEFAULT_BLOCK_SIZE} points a block: the leaders, the points still racing them, and new points the response model says can still win by more than the tolerance; a point stops once it is within the tolerance of the leader or clearly behind it`,
  );
  // One point measured at every level costs a start (with its untimed passes) and trialsPerStart trials per level:
  // the grid's busy time per start, corrected from its trials per start (a blocked grid keeps a server across a
  // block boundary, so it has fewer starts than point-repetitions) to this search's, at its mean time per trial.
  const perStart = search.trialsPerStart ?? 1;
  const busyMs = grid.laneShares
    ? grid.laneShares.reduce<number | undefined>((total, share) => (total === undefined || share.ms === undefined ? undefined : total + share.ms), 0)
    : grid.wallMs;
  const pointMs =
    busyMs === undefined || grid.measureMs === undefined || grid.starts === 0
      ? undefined
      : (busyMs + (levels.length * perStart * grid.starts - grid.trials) * (grid.measureMs / grid.trials)) / grid.starts;
  const gpus = search.budget?.gpusPerServer ?? 1;
  lines.push(
    `one point at every level: ${formatPredicted(pointMs)} (a start and ${levels.length * perStart} trial${levels.length * perStart === 1 ? '' : 's'}${perStart > 1 ? `, ${perStart} per level` : ''}); the full interleaved grid: ${predictedText(grid)} (${grid.trials} trials, ${grid.starts} starts)${sourcesNote(grid)}`,
  );
  const firstMs = pointMs === undefined ? undefined : pointMs * first;
  const budget = searchBudgetSeconds(search);
  const firstText = `block 1 alone: ${formatPredicted(firstMs)}, ${gpuHoursText(firstMs === undefined ? undefined : (firstMs / 3_600_000) * gpus)} GPU-hours`;
  if (budget === undefined) lines.push(`predicted: ${firstText}; then until the leader is within the tolerance of the best (no budget: no upper bound)`);
  else {
    const points = pointMs === undefined ? undefined : Math.floor(budget / ((pointMs / 1000) * gpus));
    const buys =
      points === undefined
        ? 'an unknown number of point measurements (no cost history yet)'
        : `about ${points} point measurements (block 1 and ${Math.max(0, Math.ceil((points - first) / DEFAULT_BLOCK_SIZE))} more blocks of up to ${DEFAULT_BLOCK_SIZE})`;
    const share = grid.gpuHours === undefined ? '' : `, ${shareText(budget / 3600 / grid.gpuHours)} of the grid's`;
    // The strategy checks the budget between blocks: a block started before it runs out runs whole.
    const blockMs = pointMs === undefined ? undefined : pointMs * Math.max(first, DEFAULT_BLOCK_SIZE);
    const over = blockMs === undefined ? 'one block' : `one block, up to ${formatGpuTime((blockMs / 1000) * gpus)}`;
    lines.push(
      `predicted: the budget, ${gpuHoursText(budget / 3600)} GPU-hours${share}, plus at most ${over} (the budget is checked between blocks, and a block started before it runs out runs whole); ${firstText}; it stops sooner once resolved`,
    );
    lines.push(`budget: ${formatGpuTime(budget)} of GPU time (${gpuHoursText(budget / 3600)} GPU-hours) buys ${buys}`);
  }
  return lines.join('\n');
}
