import { formatDuration, formatNumber } from '../../util/format.js';
import { mulberry32 } from '../../util/random.js';
import { pairKey } from '../../util/trial-keys.js';
import { type BlockedValue, stratifiedRankSumTest } from '../analysis/stats.js';
import type { Plan, PlannedTrial, ResolvedExperiment } from '../spec/types.js';
import { type CostModel, type PlanPrediction, predictPlan } from './budget.js';
import { countRestarts, type PlanInput, planExperiment } from './plan.js';

/**
 * A blocked schedule: each server config is started once per pass and runs several repetitions of its
 * (variant, workload) pairs inside. Pass order is counterbalanced (A B C, then C B A, …: ABBA for two configs),
 * so a slow drift adds as much to every config over two passes, and consecutive passes share the boundary
 * server: restarts = passes × (configs − 1) instead of repetitions × (configs − 1).
 */
export function blockedPlan(input: PlanInput & { passes: number | number[] }): Plan {
  const random = mulberry32(input.seed);
  const groups = new Map<string, string[]>();
  for (const variant of input.variants) groups.set(variant.serverKey, [...(groups.get(variant.serverKey) ?? []), variant.name]);
  const forward = shuffle([...groups.keys()], random);
  const sizes = typeof input.passes === 'number' ? passSizes(input.repetitions, input.passes) : input.passes;
  const trials: PlannedTrial[] = [];
  const repetitionOf = new Map<string, number>();
  sizes.forEach((size, pass) => {
    const order = pass % 2 === 0 ? forward : [...forward].reverse();
    for (const serverKey of order) {
      const slots = groups
        .get(serverKey)!
        .flatMap((variant) => input.workloads.flatMap((workload) => Array.from({ length: size }, () => ({ variant, workload }))));
      for (const { variant, workload } of shuffle(slots, random)) {
        const key = pairKey({ variant, workload });
        const repetition = repetitionOf.get(key) ?? 0;
        repetitionOf.set(key, repetition + 1);
        trials.push({ index: trials.length, block: pass, repetition, variant, serverKey, workload });
      }
    }
  });
  return { schedule: 'blocked', seed: input.seed, blocks: sizes.length, restarts: countRestarts(trials), trials };
}

/** Repetitions split as evenly as possible over passes (earlier passes take the remainder). */
export function passSizes(repetitions: number, passes: number): number[] {
  const count = Math.max(1, Math.min(passes, repetitions));
  return Array.from({ length: count }, (_, pass) => Math.floor(repetitions / count) + (pass < repetitions % count ? 1 : 0));
}

/**
 * Auto picks blocked once a server start costs at least this many trials' time: interleaving would then spend
 * more of the campaign loading models than measuring them.
 */
export const AUTO_BLOCKED_RATIO = 1;

export interface ScheduleOption {
  schedule: 'interleaved' | 'blocked';
  plan: Plan;
  prediction: PlanPrediction;
}

export interface ScheduleChoice extends ScheduleOption {
  /** Both candidates, for the trade-off line of `servelab plan`. */
  options: ScheduleOption[];
  /** Mean predicted startup / mean predicted trial time; undefined when either is unknown. */
  startupToTrialRatio: number | undefined;
  /** Why this schedule, in one sentence. */
  reason: string;
}

/**
 * Repetitions per pass of a blocked schedule. Fixed runs: 2 passes (one forward, one reversed) unless the file
 * says. Races: the repetitions the Holm-corrected test against the best (stratified by pass, see compareBlocked)
 * needs before it can eliminate anything, split over a forward and a reversed pass (no test can decide after the
 * first half anyway), so a slow drift of the machine falls on every config alike before the first elimination;
 * then passes of the first pass's size: each costs a restart per surviving config, so it brings as many trials as
 * a first pass to the next test (passes of 2 paid about twice the restarts for the same trials: see campaign-cost).
 */
export function blockedPassSizes(experiment: ResolvedExperiment): number[] {
  if (experiment.passes !== undefined) return passSizes(experiment.trials, experiment.passes);
  if (experiment.stopping !== 'race') return passSizes(experiment.trials, 2);
  const comparisons = Math.max(1, new Set(experiment.variants.map((variant) => variant.name)).size - 1);
  const decisive = Math.min(experiment.trials, smallestDecisiveN(comparisons, experiment.verdict.alpha));
  const sizes = passSizes(decisive, 2);
  const later = sizes[0]!;
  for (let left = experiment.trials - decisive; left > 0; left -= later) sizes.push(Math.min(later, left));
  return sizes;
}

/**
 * Smallest n for which n vs n trials split over two passes let the stratified rank-sum test (compareBlocked) get
 * below alpha / comparisons even with one out-of-order pair in each pass. Complete separation in every pass (the
 * test's floor, 2 / Π C(2s, s)) is too rare under trial noise to plan on: a race planned on it rarely decides after
 * its first passes and pays a further pass of restarts. 7 comparisons: 8 (4 + 4; 3 + 3 would need separation).
 */
export function smallestDecisiveN(comparisons: number, alpha: number): number {
  let n = 2;
  while (oneInversionPValue(passSizes(n, 2)) >= alpha / comparisons && n < 50) n += 1;
  return n;
}

/** Stratified p of passes of s vs s trials, separated except that the closest two trials of a pass (s ≥ 2) are swapped. */
function oneInversionPValue(sizes: number[]): number {
  const baseline: BlockedValue[] = [];
  const candidate: BlockedValue[] = [];
  sizes.forEach((size, block) => {
    const swap = size >= 2 ? 1 : 0;
    for (let i = 0; i < size; i += 1) {
      baseline.push({ value: i === size - 1 ? size - 1 + swap : i, block });
      candidate.push({ value: i === 0 ? size - swap : size + i, block });
    }
  });
  return stratifiedRankSumTest(baseline, candidate, { seed: 1 }).pValue;
}

/** The experiment's schedule (resolving `auto` with the cost model) and the plan that goes with it. */
export function chooseSchedule(experiment: ResolvedExperiment, costs: CostModel): ScheduleChoice {
  if (experiment.search) return searchSchedule(experiment, costs);
  const input: PlanInput = {
    variants: experiment.variants,
    workloads: experiment.workloads.map((workload) => workload.label),
    repetitions: experiment.trials,
    seed: experiment.seed,
  };
  const interleavedPlan = { ...planExperiment(input), schedule: 'interleaved' as const };
  const blocked = blockedPlan({ ...input, passes: blockedPassSizes(experiment) });
  const options: ScheduleOption[] = [
    { schedule: 'interleaved', plan: interleavedPlan, prediction: predictPlan(interleavedPlan, experiment, costs) },
    { schedule: 'blocked', plan: blocked, prediction: predictPlan(blocked, experiment, costs) },
  ];
  const ratio = startupToTrialRatio(options[0]!.prediction);
  const setting = experiment.schedule ?? 'interleaved';
  if (setting !== 'auto') {
    const chosen = options.find((option) => option.schedule === setting)!;
    return { ...chosen, options, startupToTrialRatio: ratio, reason: `schedule: ${setting} (as the experiment file says)` };
  }
  if (ratio === undefined) {
    const chosen = options[0]!;
    return {
      ...chosen,
      options,
      startupToTrialRatio: ratio,
      reason: 'auto: startup or trial costs unknown (no history), so interleaved, the safer comparison',
    };
  }
  const preferred = ratio >= AUTO_BLOCKED_RATIO ? 'blocked' : 'interleaved';
  const fits = (option: ScheduleOption): boolean => limitViolations(experiment, option.prediction).length === 0;
  let chosen = options.find((option) => option.schedule === preferred)!;
  let reason =
    preferred === 'blocked'
      ? `auto: a start costs ${formatNumber(ratio)}× a trial (≥ ${AUTO_BLOCKED_RATIO}), so a blocked schedule saves restarts`
      : `auto: a start costs ${formatNumber(ratio)}× a trial (< ${AUTO_BLOCKED_RATIO}), so restarts are cheap and full interleaving is affordable`;
  const other = options.find((option) => option !== chosen)!;
  if (!fits(chosen) && fits(other)) {
    reason = `auto: ${chosen.schedule} would exceed ${limitViolations(experiment, chosen.prediction)[0]}, ${other.schedule} fits`;
    chosen = other;
  }
  return { ...chosen, options, startupToTrialRatio: ratio, reason };
}

/**
 * A search starts with an empty plan: its strategy appends a block at a time (run/search-control.ts). The one
 * option shown beside it is the full interleaved grid of every valid point, the cost the search is to undercut.
 */
function searchSchedule(experiment: ResolvedExperiment, costs: CostModel): ScheduleChoice {
  const empty: Plan = { schedule: 'interleaved', seed: experiment.seed, blocks: 0, restarts: 0, trials: [] };
  const grid = {
    ...planExperiment({
      variants: experiment.variants,
      workloads: experiment.workloads.map((w) => w.label),
      repetitions: experiment.trials,
      seed: experiment.seed,
    }),
    schedule: 'interleaved' as const,
  };
  const option = { schedule: 'interleaved' as const, plan: empty, prediction: predictPlan(empty, experiment, costs) };
  return {
    ...option,
    options: [{ schedule: 'interleaved', plan: grid, prediction: predictPlan(grid, experiment, costs) }],
    startupToTrialRatio: undefined,
    reason: 'search: the strategy plans a block of points at a time',
  };
}

/** Mean predicted startup / mean predicted trial time; undefined when either is unknown. */
function startupToTrialRatio(prediction: PlanPrediction): number | undefined {
  const starts = prediction.configs.filter((config) => config.starts > 0);
  if (prediction.measureMs === undefined || starts.some((config) => config.startupMs.ms === undefined)) return undefined;
  const meanStartup = starts.reduce((sum, config) => sum + config.startupMs.ms!, 0) / Math.max(1, starts.length);
  const trials = prediction.configs.reduce((sum, config) => sum + config.trials, 0);
  const meanTrial = prediction.measureMs / Math.max(1, trials);
  return meanTrial > 0 ? meanStartup / meanTrial : Number.POSITIVE_INFINITY;
}

/**
 * Budget and restart limits a predicted plan breaks, one phrase each ("the budget of 2.0 h wall time (3.1 h)"). An
 * unknown wall time breaks none: `uncheckedBudget` says so instead.
 */
export function limitViolations(experiment: ResolvedExperiment, prediction: PlanPrediction): string[] {
  const violations: string[] = [];
  const { budget, maxRestarts } = experiment;
  if (maxRestarts !== undefined && prediction.restarts > maxRestarts) violations.push(`maxRestarts ${maxRestarts} (${prediction.restarts} planned)`);
  if (budget?.wallTimeMs !== undefined && prediction.wallMs !== undefined && prediction.wallMs > budget.wallTimeMs) {
    violations.push(`the wall-time budget of ${formatDuration(budget.wallTimeMs)} (${formatDuration(prediction.wallMs)} predicted)`);
  }
  if (budget?.gpuHours !== undefined && prediction.gpuHours !== undefined && prediction.gpuHours > budget.gpuHours) {
    violations.push(`the budget of ${budget.gpuHours} GPU-hours (${formatNumber(prediction.gpuHours)} predicted)`);
  }
  return violations;
}

/** Why the budget cannot be checked (the wall time is unknown), or undefined when it can or there is none. */
export function uncheckedBudget(experiment: ResolvedExperiment, prediction: PlanPrediction): string | undefined {
  const budget = experiment.budget;
  if (!budget || prediction.wallMs !== undefined) return undefined;
  return 'the budget cannot be checked: the wall time is unknown until a run has recorded startups and trials';
}

// Re-exported for the callers in experiment/run/ that still import it from here.
export { formatDuration };

/** Fisher–Yates with the plan's seeded generator. */
function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
