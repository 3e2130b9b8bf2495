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
  /** Every measured point as the search decided it, the answer first (stated bests, leaders, as good, …, out). */
  table: SearchPointRow[];
  /** One heatmap per load level; none before a point is measured. */
  heatmaps: SearchHeatmap[];
}

/**
 * A point's standing: the stated best (what the answer names) or a leader of some race; else as a step dropped it
 * (as good as the leader, not better, out); else still racing, or `unresolved` once the search ended without
 * deciding it (the budget ran out).
 */
export type SearchPointStatus = 'best' | 'leader' | 'as good' | 'not better' | 'out' | 'racing' | 'unresolved';

/** One measured point of the search's per-point table, in place of verdicts against an arbitrary first point. */
export interface SearchPointRow {
  variant: string;
  status: SearchPointStatus;
  /** How many blocks were measured when the step that dropped it was decided ("after block 2", as `show` numbers blocks). */
  decidedAfterBlock?: number;
  /** Valid trials per level. */
  trials: Record<string, number>;
  /** Per race, each level's then across levels ('*'): its standing there and the decision's figures. */
  races: SearchRaceCell[];
  /** The stored reason, as the strategy worded it, for a dropped or unresolved point. */
  reason?: string;
}

export interface SearchRaceCell {
  level: string;
  /** `leader`/`best` where it leads (best: the race's stated best); figures only where a decision gave them. */
  status: SearchPointStatus;
  /** The race's leader it was judged against. */
  versus?: string;
  /** Relative to that leader in the objective's direction (−0.114 = 11.4% worse), and its racing bounds. */
  estimate?: number;
  lower?: number;
  upper?: number;
  /** Blocks the comparison rests on. */
  blocks?: number;
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
  /**
   * The search's decision about the shown point at this level, never a second estimator: `best` the level's stated
   * best (the tie-break's choice, what the answer names), `leader` the level's leader where that is another point,
   * `as good` a point the search judged as good as the leader; absent for every other point.
   */
  mark?: 'best' | 'leader' | 'as good';
}

export function searchSummary(experiment: ResolvedExperiment, steps: readonly StoredSearchStep[], trials: readonly TrialRecord[]): SearchSummary {
  const run = searchRunOf(experiment)!;
  const standing = searchStanding(run, steps, trials);
  const objective = searchObjective(experiment);
  const budget = searchBudgetSeconds(run.search);
  const leaders = searchLeaders(run, standing.leaders);
  const lastBlockFrom = steps.filter((step) => step.measure.length > 0).at(-1)?.spentSeconds;
  const { points, combinations, measured, out, alive, blocks } = standing;
  // Each measured point's median per level, read once for the per-point table and the heatmaps.
  const medians = mediansOf(run, experiment, trials);
  const table = pointTable(experiment, run, steps, leaders, medians);
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
    // The open points' figures are in `table`, by variant name.
    ...(standing.done && { done: { reason: standing.done.reason, resolved: standing.done.resolved, unresolved: [...standing.done.unresolved] } }),
    leaders,
    table,
    heatmaps: heatmaps(experiment, run, table, leaders, medians),
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

function heatmaps(
  experiment: ResolvedExperiment,
  run: SearchRun,
  table: readonly SearchPointRow[],
  leaders: readonly SearchLeader[],
  medians: Medians,
): SearchHeatmap[] {
  if (medians.size === 0) return [];
  const maximize = searchObjective(experiment).direction === 'maximize';
  const better = (a: number, b: number): boolean => (maximize ? a > b : a < b);
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
  const name = (point: string): string => run.variantOf.get(point) ?? point;
  return levels.map((level): SearchHeatmap => {
    // The marks are the search's decisions at this level (the per-point table's), never a comparison of raw medians.
    const leader = leaders.find((entry) => entry.level === level);
    const markOf = (variant: string): HeatCell['mark'] => {
      if (variant === leader?.best) return 'best';
      if (variant === leader?.variant) return 'leader';
      const race = table.find((row) => row.variant === variant)?.races.find((cell) => cell.level === level);
      return race?.status === 'as good' ? 'as good' : undefined;
    };
    const rank = (mark: HeatCell['mark']): number => (mark === 'best' ? 3 : mark === 'leader' ? 2 : mark === 'as good' ? 1 : 0);
    const cells: HeatCell[] = [];
    yValues.forEach((_, y) => {
      xValues.forEach((_, x) => {
        const points = (cellPoints.get(`${x}|${y}`) ?? []).map((point) => pointKey(run.space, point));
        const measured = points.filter((point) => medians.get(point)?.has(level));
        // A cell shows its most decided point (the stated best, the leader, one as good), else its best median.
        const shown = measured.reduce<string | undefined>((best, point) => {
          if (best === undefined) return point;
          const [a, b] = [rank(markOf(name(point))), rank(markOf(name(best)))];
          return a > b || (a === b && better(medians.get(point)!.get(level)!.value, medians.get(best)!.get(level)!.value)) ? point : best;
        }, undefined);
        const figure = shown === undefined ? undefined : medians.get(shown)!.get(level)!;
        const mark = shown === undefined ? undefined : markOf(name(shown));
        cells.push({
          x,
          y,
          state: points.length === 0 ? 'invalid' : figure ? 'measured' : 'unmeasured',
          ...(figure && { value: figure.value, trials: figure.trials, variant: name(shown!) }),
          points: points.length,
          measuredPoints: measured.length,
          ...(mark && { mark }),
        });
      });
    });
    return {
      level,
      x: { knob: xKnob!, values: xValues.map(String) },
      ...(yKnob !== undefined && { y: { knob: yKnob, values: yValues.map(String) } }),
      others,
      cells,
    };
  });
}

const STATUS_ORDER: readonly SearchPointStatus[] = ['best', 'leader', 'as good', 'not better', 'racing', 'unresolved', 'out'];

/**
 * The search's per-point table from its stored steps: each measured point's standing per race with the figures of
 * the decision that dropped it (or, once the budget ended the search, its standing in every race then), the answer's
 * points first. The figures are the ones the strategy stored as data (search/types.ts RaceFigures); only steps
 * stored before it did are read back from its reasons' words (`parseRaceDetails`).
 */
function pointTable(
  experiment: ResolvedExperiment,
  run: SearchRun,
  steps: readonly StoredSearchStep[],
  leaders: readonly SearchLeader[],
  medians: Medians,
): SearchPointRow[] {
  const name = (point: string): string => run.variantOf.get(point) ?? point;
  const races = [...experiment.workloads.map((workload) => workload.label), ACROSS_LEVELS];
  const maximize = searchObjective(experiment).direction === 'maximize';
  // The tolerance as a relative change in the objective's direction (strategy.ts `zone`, turned into a ratio).
  const tolerance = run.search.tolerance;
  const outBelow = maximize ? -tolerance : 1 / (1 + tolerance) - 1;
  type Figures = NonNullable<StoredSearchStep['drop'][number]['races']>;
  const dropped = new Map<string, { status: SearchPointStatus; reason: string; after: number; races?: Figures }>();
  for (const step of steps)
    for (const entry of step.drop)
      if (!dropped.has(entry.point))
        dropped.set(entry.point, {
          status: (entry.status as SearchPointStatus | undefined) ?? 'out',
          reason: entry.reason,
          after: step.block,
          ...(entry.races && { races: entry.races }),
        });
  const done = steps.at(-1)?.done;
  const openFigures = new Map((done?.open ?? []).map((entry) => [entry.point, entry.races]));
  // Each open point's line: the one that names it first (stored figures), else the older stores' only wording.
  const open = new Map<string, string>();
  for (const line of done?.unresolved ?? []) {
    const point = [...openFigures.keys()].find((key) => line.startsWith(`${key} `) || line.startsWith(`${key}, `));
    const cut = line.indexOf(' may still beat a leader by more than ');
    if (point !== undefined) open.set(point, line);
    else if (cut > 0) open.set(line.slice(0, cut), line);
  }
  const keys = new Set([...medians.keys(), ...dropped.keys()]);
  const rows = run.space.points
    .map((point) => pointKey(run.space, point))
    .filter((key) => keys.has(key))
    .map((key): SearchPointRow => {
      const variant = name(key);
      const drop = dropped.get(key);
      const unresolved = open.get(key);
      const figures = drop ? drop.races : openFigures.get(key);
      const cells = new Map(
        figures
          ? figures.map((race): [string, SearchRaceCell] => [race.level, { ...race, ...(race.versus !== undefined && { versus: name(race.versus) }) }])
          : parseRaceDetails(drop?.reason ?? unresolved ?? '', races).map(({ level, text }) => [
              level,
              raceCell(level, text, drop !== undefined, outBelow, name),
            ]),
      );
      for (const leader of leaders) {
        if (leader.best !== variant && leader.variant !== variant) continue;
        cells.set(leader.level, { ...(cells.get(leader.level) ?? { level: leader.level }), status: leader.best === variant ? 'best' : 'leader' });
      }
      const status: SearchPointStatus = leaders.some((leader) => leader.best === variant)
        ? 'best'
        : leaders.some((leader) => leader.variant === variant)
          ? 'leader'
          : (drop?.status ?? (done ? 'unresolved' : 'racing'));
      const counts = medians.get(key) ?? new Map<string, { trials: number }>();
      return {
        variant,
        status,
        ...(drop && { decidedAfterBlock: drop.after }),
        trials: Object.fromEntries(races.filter((level) => level !== ACROSS_LEVELS).map((level) => [level, counts.get(level)?.trials ?? 0])),
        races: races.flatMap((level) => (cells.has(level) ? [cells.get(level)!] : [])),
        ...((drop || unresolved) && { reason: drop?.reason ?? unresolved! }),
      };
    });
  const across = (row: SearchPointRow): number => row.races.find((cell) => cell.level === ACROSS_LEVELS)?.estimate ?? 0;
  return rows.sort((a, b) => STATUS_ORDER.indexOf(a.status) - STATUS_ORDER.indexOf(b.status) || across(b) - across(a));
}

/**
 * A reason's per-race parts, "c=8: −49.0% vs KEY (…)" each, split where the next race's name begins: the reader of
 * steps stored before the strategy kept its figures as data (strategy.ts `judge`, `dropOf` and `unresolvedLines`
 * word them: "out: c=8: −49.0% vs KEY (97.5% bounds −57.4%…−39.0%, 1 block); *: …", "KEY may still beat a leader
 * by more than 2%: …"), so that older stores still show them.
 */
function parseRaceDetails(reason: string, races: readonly string[]): Array<{ level: string; text: string }> {
  const names = races.map((race) => race.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
  const body = reason.replace(/^(?:as good|not better|out): /, '').replace(/^.*? may still beat a leader by more than [^:]*: /, '');
  return body.split(new RegExp(`; (?=(?:${names}): )`)).flatMap((part) => {
    const level = races.filter((race) => part.startsWith(`${race}: `)).sort((a, b) => b.length - a.length)[0];
    return level === undefined ? [] : [{ level, text: part.slice(level.length + 2) }];
  });
}

const DETAIL = /^([+−-][\d.]+)% vs (.+) \([\d.]+% bounds ([+−-][\d.]+)%…([+−-][\d.]+)%, (\d+) blocks?\)$/;

/** One race's figures; a dropped point's status there from its bounds (strategy.ts `judge`), an open one's `racing`. */
function raceCell(level: string, text: string, dropped: boolean, outBelow: number, name: (point: string) => string): SearchRaceCell {
  const match = DETAIL.exec(text);
  if (!match) return { level, status: text === 'leader' ? 'leader' : 'racing' };
  const share = (figure: string): number => Number(figure.replace('−', '-')) / 100;
  const [estimate, lower, upper] = [share(match[1]!), share(match[3]!), share(match[4]!)];
  const status: SearchPointStatus = !dropped ? 'racing' : lower > outBelow ? 'as good' : upper < outBelow ? 'out' : 'not better';
  return { level, status, versus: name(match[2]!), estimate, lower, upper, blocks: Number(match[5]) };
}

/** The across-levels leader of a summary, and each level's, for views that list them apart. */
export function leadersOf(summary: SearchSummary): { across?: SearchLeader; levels: SearchLeader[] } {
  const across = summary.leaders.find((leader) => leader.level === ACROSS_LEVELS);
  return { ...(across && { across }), levels: summary.leaders.filter((leader) => leader.level !== ACROSS_LEVELS) };
}

/** The leader whose stated best the answer names: across levels, else the only level's; none before a point is measured. */
export function answerLeader(summary: SearchSummary): SearchLeader | undefined {
  const { across, levels } = leadersOf(summary);
  return across ?? (levels.length === 1 ? levels[0] : undefined);
}
