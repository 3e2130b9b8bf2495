import { median } from 'simple-statistics';
import type { StoredSearchStep } from '../../store/search.js';
import type { TrialRecord } from '../../store/types.js';
import { ACROSS_LEVELS } from '../search/strategy.js';
import { type KnobValue, pointKey, type SearchPoint } from '../search/types.js';
import { metricUnit, metricValue } from '../spec/metrics.js';
import type { ResolvedExperiment } from '../spec/types.js';
import { type SearchObjective, type SearchRun, type SearchStanding, searchBudgetSeconds, searchObjective, searchRunOf, searchStanding } from './search.js';

/**
 * A search run in one model every view renders (run's final text, `show` and `show --json`, `ls`, the Markdown and
 * HTML reports, the UI, `export`), carried as the run's conclusion (conclusion.ts `search`): where it stands, its
 * leaders with their margins and its stated best per level and across levels (the strategy's block-adjusted
 * estimate and tie-break, never a second ranking by raw medians), the budget spent, and its response surface as
 * heatmaps over two knobs per load level. Pure: computed from the stored steps and trials on read.
 */
export interface SearchSummary extends Pick<SearchStanding, 'points' | 'combinations' | 'measured' | 'out' | 'alive' | 'blocks'> {
  objective: SearchObjective;
  /** The objective's unit ("tok/s"), empty when it has none. */
  unit: string;
  /** Steps decided so far (one before each block, and the last one that ends the search). */
  steps: number;
  tolerance: number;
  confidence: number;
  /** The file's tie-break, as written ("draftTokens", "steps desc", a metric). */
  tieBreak: string[];
  /** GPU-seconds spent when the last step was decided, and the budget (the tighter of GPU-hours and wall time). */
  spentGpuSeconds: number;
  budgetGpuSeconds?: number;
  /** GPU-seconds spent when the last block measured was decided: the budget is checked between blocks, so a block started before it ran out runs whole. */
  lastBlockFromGpuSeconds?: number;
  /** Set once the search ended: why, and what is still unresolved. */
  done?: { reason: string; resolved: boolean; unresolved: string[] };
  /** The latest leaders: each level's, then across levels (`level: '*'`). */
  leaders: SearchLeader[];
  /** One heatmap per load level; none before a point is measured. */
  heatmaps: SearchHeatmap[];
}

export interface SearchLeader {
  /** A workload label, or '*' for the one config best across levels. */
  level: string;
  /** The leader's variant name. */
  variant: string;
  /** A level's leader: its fitted median there; across levels: its geometric mean of ratios to each level's leader. */
  value: number;
  /** Over the runner-up, relative, in the objective's direction (0.012 = 1.2% better). */
  margin?: number;
  /** With a tie-break, the variant it prefers among those within the tolerance of the leader, where that is another point. */
  preferred?: string;
  /** The stated best config of this level (or across levels): the tie-break's choice, else the leader. Every view names this one. */
  best: string;
}

/** A load level's response over two knobs (one when the space has one knob), each cell the best measured point in it. */
export interface SearchHeatmap {
  level: string;
  x: { knob: string; values: string[] };
  /** Absent when the space has a single knob: one row. */
  y?: { knob: string; values: string[] };
  /** Knobs not on the axes: each cell shows the best measured point over their values. */
  others: string[];
  /** The level leader's measured median (what "within the tolerance" is judged against), when measured. */
  leaderValue?: number;
  cells: HeatCell[];
}

export interface HeatCell {
  /** Indexes into x.values and y.values (0 without a y axis). */
  x: number;
  y: number;
  /** measured: some point of the cell has valid trials at this level; invalid: every combination breaks a constraint. */
  state: 'measured' | 'unmeasured' | 'invalid';
  /** The shown point's median at this level, over its valid trials. */
  value?: number;
  /** The point the cell shows: the level's leader when it lies in the cell, else the cell's best measured point. */
  variant?: string;
  trials?: number;
  /** Valid points in the cell, and how many of them were measured. */
  points: number;
  measuredPoints: number;
  leader: boolean;
  /** Its median within the tolerance of the leader's (the leader's cell included). */
  withinTolerance: boolean;
}

export function searchSummary(experiment: ResolvedExperiment, steps: readonly StoredSearchStep[], trials: readonly TrialRecord[]): SearchSummary {
  const run = searchRunOf(experiment)!;
  const standing = searchStanding(run, steps, trials);
  const objective = searchObjective(experiment);
  const budget = searchBudgetSeconds(run.search);
  const leaders = searchLeaders(run, standing.leaders);
  const lastBlockFrom = steps.filter((step) => step.measure.length > 0).at(-1)?.spentSeconds;
  const { points, combinations, measured, out, alive, blocks } = standing;
  return {
    objective,
    unit: metricUnit(objective.metric),
    points,
    combinations,
    measured,
    out,
    alive,
    blocks,
    steps: steps.length,
    tolerance: run.search.tolerance,
    confidence: run.search.confidence,
    tieBreak: run.search.tieBreak.map((entry) => (entry.kind === 'knob' ? `${entry.name}${entry.descending ? ' desc' : ''}` : entry.metric)),
    spentGpuSeconds: steps.at(-1)?.spentSeconds ?? 0,
    ...(budget !== undefined && { budgetGpuSeconds: budget }),
    ...(lastBlockFrom !== undefined && { lastBlockFromGpuSeconds: lastBlockFrom }),
    ...(standing.done && { done: { ...standing.done, unresolved: [...standing.done.unresolved] } }),
    leaders,
    heatmaps: heatmaps(experiment, run, standing.leaders, trials),
  };
}

/** Stored leaders by variant name; a tie-break's preferred point only where it differs from the leader. */
export function searchLeaders(run: SearchRun, leaders: StoredSearchStep['leaders']): SearchLeader[] {
  const name = (point: string): string => run.variantOf.get(point) ?? point;
  return leaders.map((leader): SearchLeader => {
    const preferred = leader.preferred !== undefined && leader.preferred !== leader.point ? name(leader.preferred) : undefined;
    return {
      level: leader.level,
      variant: name(leader.point),
      value: leader.value,
      ...(leader.margin !== undefined && { margin: leader.margin }),
      ...(preferred !== undefined && { preferred }),
      best: preferred ?? name(leader.point),
    };
  });
}

/** Each measured point's median of the objective per level, over its valid trials. */
type Medians = Map<string, Map<string, { value: number; trials: number }>>;

function mediansOf(run: SearchRun, experiment: ResolvedExperiment, trials: readonly TrialRecord[]): Medians {
  const { metric } = searchObjective(experiment);
  const values = new Map<string, Map<string, number[]>>();
  for (const trial of trials) {
    const point = run.pointOf.get(trial.variant);
    const value = metricValue(trial.metrics, metric);
    if (point === undefined || !Number.isFinite(value)) continue;
    const levels = values.get(point) ?? new Map<string, number[]>();
    levels.set(trial.workload, [...(levels.get(trial.workload) ?? []), value]);
    values.set(point, levels);
  }
  return new Map(
    [...values].map(([point, levels]) => [point, new Map([...levels].map(([level, list]) => [level, { value: median(list), trials: list.length }]))]),
  );
}

/**
 * The two knobs that matter most on the axes: those whose values move the best measured median the most (the
 * spread of the per-value bests, relative to the level's best, averaged over levels). Knob order breaks ties, and
 * is the order with fewer than two measured values.
 */
function axisKnobs(run: SearchRun, medians: Medians, levels: readonly string[], better: (a: number, b: number) => boolean): string[] {
  const knobs = run.space.knobs.map((knob) => knob.name);
  if (knobs.length <= 2) return knobs;
  const points = new Map(run.space.points.map((point) => [pointKey(run.space, point), point]));
  const spread = (knob: string): number => {
    let total = 0;
    for (const level of levels) {
      const bests = new Map<KnobValue, number>();
      for (const [key, byLevel] of medians) {
        const value = byLevel.get(level)?.value;
        const at = points.get(key)?.[knob];
        if (value === undefined || at === undefined) continue;
        const current = bests.get(at);
        if (current === undefined || better(value, current)) bests.set(at, value);
      }
      const list = [...bests.values()];
      if (list.length < 2) continue;
      const top = Math.max(...list.map(Math.abs));
      total += top === 0 ? 0 : (Math.max(...list) - Math.min(...list)) / top;
    }
    return total;
  };
  return knobs
    .map((knob, index) => ({ knob, index, spread: spread(knob) }))
    .sort((a, b) => b.spread - a.spread || a.index - b.index)
    .slice(0, 2)
    .sort((a, b) => a.index - b.index)
    .map((entry) => entry.knob);
}

function heatmaps(experiment: ResolvedExperiment, run: SearchRun, leaders: StoredSearchStep['leaders'], trials: readonly TrialRecord[]): SearchHeatmap[] {
  const medians = mediansOf(run, experiment, trials);
  if (medians.size === 0) return [];
  const maximize = searchObjective(experiment).direction === 'maximize';
  const better = (a: number, b: number): boolean => (maximize ? a > b : a < b);
  const withinTolerance = (value: number, best: number): boolean =>
    maximize ? value >= best * (1 - run.search.tolerance) : value <= best * (1 + run.search.tolerance);
  const levels = experiment.workloads.map((workload) => workload.label);
  const [xKnob, yKnob] = axisKnobs(run, medians, levels, better);
  const knobOf = (name: string) => run.space.knobs.find((knob) => knob.name === name)!;
  const xValues = knobOf(xKnob!).values;
  const yValues: readonly KnobValue[] = yKnob === undefined ? [''] : knobOf(yKnob).values;
  const others = run.space.knobs.map((knob) => knob.name).filter((knob) => knob !== xKnob && knob !== yKnob);
  // Every valid point in its cell, by the cell's "x|y" indexes.
  const cellPoints = new Map<string, SearchPoint[]>();
  for (const point of run.space.points) {
    const cell = `${xValues.indexOf(point[xKnob!]!)}|${yKnob === undefined ? 0 : yValues.indexOf(point[yKnob]!)}`;
    cellPoints.set(cell, [...(cellPoints.get(cell) ?? []), point]);
  }
  return levels.map((level): SearchHeatmap => {
    const leaderPoint = leaders.find((leader) => leader.level === level)?.point;
    const leaderValue = leaderPoint === undefined ? undefined : medians.get(leaderPoint)?.get(level)?.value;
    const cells: HeatCell[] = [];
    yValues.forEach((_, y) => {
      xValues.forEach((_, x) => {
        const points = (cellPoints.get(`${x}|${y}`) ?? []).map((point) => pointKey(run.space, point));
        const measured = points.filter((point) => medians.get(point)?.has(level));
        const hasLeader = leaderPoint !== undefined && measured.includes(leaderPoint);
        const shown = hasLeader
          ? leaderPoint
          : measured.reduce<string | undefined>(
              (best, point) => (best === undefined || better(medians.get(point)!.get(level)!.value, medians.get(best)!.get(level)!.value) ? point : best),
              undefined,
            );
        const figure = shown === undefined ? undefined : medians.get(shown)!.get(level)!;
        cells.push({
          x,
          y,
          state: points.length === 0 ? 'invalid' : figure ? 'measured' : 'unmeasured',
          ...(figure && { value: figure.value, trials: figure.trials, variant: run.variantOf.get(shown!) ?? shown! }),
          points: points.length,
          measuredPoints: measured.length,
          leader: hasLeader,
          withinTolerance: figure !== undefined && leaderValue !== undefined && withinTolerance(figure.value, leaderValue),
        });
      });
    });
    return {
      level,
      x: { knob: xKnob!, values: xValues.map(String) },
      ...(yKnob !== undefined && { y: { knob: yKnob, values: yValues.map(String) } }),
      others,
      ...(leaderValue !== undefined && { leaderValue }),
      cells,
    };
  });
}

/** The across-levels leader of a summary, and each level's, for views that list them apart. */
export function leadersOf(summary: SearchSummary): { across?: SearchLeader; levels: SearchLeader[] } {
  const across = summary.leaders.find((leader) => leader.level === ACROSS_LEVELS);
  return { ...(across && { across }), levels: summary.leaders.filter((leader) => leader.level !== ACROSS_LEVELS) };
}
