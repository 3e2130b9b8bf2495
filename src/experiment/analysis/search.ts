import { median } from 'simple-statistics';
import type { StoredSearchStep } from '../../store/search.js';
import type { TrialRecord } from '../../store/types.js';
import { pointKey, type SearchObservation, type SearchPoint, type SearchSettings, type SearchSpace } from '../search/types.js';
import { higherIsBetter, metricValue } from '../spec/metrics.js';
import { pointKeyOfVariant, searchSpaceOf } from '../spec/search-space.js';
import type { MetricName, ResolvedExperiment, ResolvedSearch } from '../spec/types.js';

/**
 * A search run read back (pure): its space, the objective the strategy optimises, the observations it saw, the
 * settings it ran under, and the state of its decisions for every view (live log, final text, show, report, UI).
 */

export interface SearchObjective {
  metric: MetricName;
  direction: 'maximize' | 'minimize';
}

/** The objective's metric, else the experiment's `metric` at its better end. */
export function searchObjective(experiment: ResolvedExperiment): SearchObjective {
  if (experiment.objective) return { metric: experiment.objective.metric, direction: experiment.objective.direction };
  return { metric: experiment.metric, direction: higherIsBetter(experiment.metric) ? 'maximize' : 'minimize' };
}

export interface SearchRun {
  search: ResolvedSearch;
  space: SearchSpace;
  /** Variant name by point key, and the reverse. */
  variantOf: Map<string, string>;
  pointOf: Map<string, string>;
}

export function searchRunOf(experiment: ResolvedExperiment): SearchRun | undefined {
  const search = experiment.search;
  if (!search) return undefined;
  const space = searchSpaceOf(search, experiment.variants);
  const variantOf = new Map<string, string>();
  const pointOf = new Map<string, string>();
  for (const variant of experiment.variants) {
    const key = pointKeyOfVariant(space, variant);
    if (key === undefined) continue;
    variantOf.set(key, variant.name);
    pointOf.set(variant.name, key);
  }
  return { search, space, variantOf, pointOf };
}

/** Valid trials of points, as the strategy sees them: the objective's value per point, level and block. */
export function searchObservations(run: SearchRun, metric: MetricName, trials: readonly TrialRecord[]): SearchObservation[] {
  return trials.flatMap((trial) => {
    const point = run.pointOf.get(trial.variant);
    const value = metricValue(trial.metrics, metric);
    return point === undefined || !Number.isFinite(value) ? [] : [{ point, level: trial.workload, block: trial.block, value }];
  });
}

/** Budget in GPU-seconds (the strategy's cost unit): the tighter of the file's GPU-hours and wall time. */
export function searchBudgetSeconds(search: ResolvedSearch): number | undefined {
  const budget = search.budget;
  if (!budget) return undefined;
  const limits = [
    ...(budget.gpuHours !== undefined ? [budget.gpuHours * 3600] : []),
    ...(budget.wallTimeMs !== undefined ? [(budget.wallTimeMs / 1000) * budget.gpusPerServer] : []),
  ];
  return Math.min(...limits);
}

/** The strategy's settings for a run: objective, tolerance, confidence, levels, tie-break over its trials so far. */
export function searchSettings(experiment: ResolvedExperiment, run: SearchRun, trials: readonly TrialRecord[]): SearchSettings {
  const budget = searchBudgetSeconds(run.search);
  return {
    direction: searchObjective(experiment).direction,
    tolerance: run.search.tolerance,
    confidence: run.search.confidence,
    levels: experiment.workloads.map((workload) => workload.label),
    seed: experiment.seed,
    ...(budget !== undefined && { budget }),
    ...(run.search.tieBreak.length > 0 && { tieBreak: tieBreakOf(run, trials) }),
  };
}

/** The file's tie-break as a comparator: knobs by value (list knobs by position), metrics by their median, better first. */
export function tieBreakOf(run: SearchRun, trials: readonly TrialRecord[]): (a: SearchPoint, b: SearchPoint) => number {
  const medians = new Map<string, number>();
  const metricMedian = (metric: MetricName, point: SearchPoint): number => {
    const key = `${metric} ${pointKey(run.space, point)}`;
    if (!medians.has(key)) {
      const variant = run.variantOf.get(pointKey(run.space, point));
      const values = trials
        .filter((trial) => trial.variant === variant)
        .map((trial) => metricValue(trial.metrics, metric))
        .filter(Number.isFinite);
      medians.set(key, values.length > 0 ? median(values) : Number.NaN);
    }
    return medians.get(key)!;
  };
  return (a, b) => {
    for (const entry of run.search.tieBreak) {
      let order: number;
      if (entry.kind === 'knob') {
        const knob = run.space.knobs.find((candidate) => candidate.name === entry.name)!;
        const rank = (point: SearchPoint): number => (knob.numeric ? Number(point[knob.name]) : knob.values.indexOf(point[knob.name]!));
        order = (rank(a) - rank(b)) * (entry.descending ? -1 : 1);
      } else {
        const [x, y] = [metricMedian(entry.metric, a), metricMedian(entry.metric, b)];
        // A point without the figure sorts after one with it.
        order = Number.isNaN(x) || Number.isNaN(y) ? Number(Number.isNaN(x)) - Number(Number.isNaN(y)) : (x - y) * (higherIsBetter(entry.metric) ? -1 : 1);
      }
      if (order !== 0) return order;
    }
    return 0;
  };
}

/** Where a search stands after its stored steps: points measured, alive, out; the latest leaders; its end. */
export interface SearchStanding {
  /** Valid points of the space, and every combination of knob values before the constraints. */
  points: number;
  combinations: number;
  measured: number;
  /** Points a step dropped (out, as good as the leader, or unable to beat it). */
  out: number;
  /** Measured points still racing. */
  alive: number;
  blocks: number;
  leaders: StoredSearchStep['leaders'];
  done?: StoredSearchStep['done'];
  /** Why each dropped point is out, by point key. */
  dropped: Map<string, string>;
}

export function searchStanding(run: SearchRun, steps: readonly StoredSearchStep[], trials: readonly TrialRecord[]): SearchStanding {
  const measured = new Set(trials.flatMap((trial) => (run.pointOf.has(trial.variant) ? [run.pointOf.get(trial.variant)!] : [])));
  const dropped = new Map(steps.flatMap((step) => step.drop.map((entry) => [entry.point, entry.reason] as const)));
  const last = steps.at(-1);
  return {
    points: run.space.points.length,
    combinations: run.search.combinations,
    measured: measured.size,
    out: dropped.size,
    alive: [...measured].filter((point) => !dropped.has(point)).length,
    blocks: new Set(trials.filter((trial) => run.pointOf.has(trial.variant)).map((trial) => trial.block)).size,
    leaders: last?.leaders ?? [],
    ...(last?.done && { done: last.done }),
    dropped,
  };
}

/**
 * A search run's experiment as verdicts and rankings should see it: its measured points (and hand-written
 * variants) only. The points it never measured are the space, not contenders with no data.
 */
export function measuredOnly(experiment: ResolvedExperiment, trials: readonly TrialRecord[]): ResolvedExperiment {
  if (!experiment.search) return experiment;
  const measured = new Set(trials.map((trial) => trial.variant));
  const run = searchRunOf(experiment)!;
  return {
    ...experiment,
    variants: experiment.variants.filter((variant) => measured.has(variant.name) || !run.pointOf.has(variant.name) || variant.name === experiment.baseline),
  };
}
