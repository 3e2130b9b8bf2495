import { median } from 'simple-statistics';
import type { TrialRecord } from '../../store/types.js';
import { formatPoints } from '../../util/format.js';
import { holds } from '../spec/constraint.js';
import { defaultObjectiveWorkload, higherIsBetter, metricValue } from '../spec/metrics.js';
import type { Constraint, Objective, ResolvedExperiment } from '../spec/types.js';
import { type EquivalenceReport, outputMatches } from './equivalence.js';
import { type Caveat, outputMatchFloorWarning, outputsFeasibility } from './feasibility.js';
import { holmAdjust } from './holm.js';
import { comparisonStrata, type Strata } from './lanes.js';
import type { BlockedValue } from './stats.js';
import { type CompareOptions, compareSamples, type Verdict } from './verdict.js';

/** One config in the ranking of a best-config verdict. */
export interface RankedConfig {
  variant: string;
  /** 1 = best among feasible configs; infeasible ones are ranked after, by objective. */
  rank: number;
  median: number | null;
  n: number;
  feasible: boolean;
  /** Broken constraints, e.g. "ttftP99Ms 612 (needs < 500)"; "outputs changed (…)" (feasibility.ts). */
  violations: string[];
  /** A feasible config's note or warning from its answers (feasibility.ts): numerics-level divergence, inconclusive. */
  caveats: Caveat[];
  /** Set when a race dropped the config. */
  eliminated?: { afterPass: number; reason: string };
}

/** Row config vs column config: ratio of medians row/column, CI, raw and Holm-adjusted p. */
export interface PairwiseCell {
  row: string;
  column: string;
  ratio: number | null;
  ciLow: number | null;
  ciHigh: number | null;
  pValue: number | null;
  pAdjusted: number | null;
  /** Row significantly better than column after Holm correction (and the CI excludes 1). */
  better: boolean;
  worse: boolean;
}

export interface BestVerdict {
  objective: Objective;
  ranking: RankedConfig[];
  winner?: string;
  runnerUp?: string;
  /**
   * Winner vs baseline and vs runner-up (ratio = winner / other), judged as the ranking judges them: significance and
   * label after Holm's correction over every pair, so the headline and these lines cannot disagree.
   */
  vsBaseline?: HolmVerdict;
  vsRunnerUp?: HolmVerdict;
  /** Winner significantly better than every other feasible config (Holm-corrected). */
  clear: boolean;
  /** Configs in ranking order; matrix[i][j] compares ranking[i] with ranking[j]. */
  matrix: PairwiseCell[][];
  conclusion: string;
  /** Said beside the conclusion: a subjectTo.outputMatch stricter than the run's A/A floor. */
  warnings: string[];
}

/** A pairwise verdict whose significance and label are Holm-corrected; `pValue` stays the raw one, beside `pAdjusted`. */
export interface HolmVerdict extends Verdict {
  pAdjusted: number | null;
}

/** A config's feasibility under the objective: broken constraints and answers, or caveats of a feasible one. */
export interface ConfigFeasibility {
  variant: string;
  feasible: boolean;
  violations: string[];
  caveats: Caveat[];
}

export interface Elimination {
  variant: string;
  afterPass: number;
  reason: string;
}

/** The experiment's objective; without one: its metric on its default workload, in the metric's natural direction. */
export function objectiveOf(experiment: ResolvedExperiment): Objective {
  return (
    experiment.objective ?? {
      metric: experiment.metric,
      direction: higherIsBetter(experiment.metric) ? 'maximize' : 'minimize',
      workload: defaultObjectiveWorkload(experiment.metric, experiment.workloads),
      constraints: [],
    }
  );
}

/** Objective values of one config's measured trials on the objective's workload, with the block each was measured in. */
export function objectiveValues(
  objective: Objective,
  trials: readonly TrialRecord[],
  variant: string,
  stratumOf: Strata['stratumOf'] = (trial) => trial.block,
): BlockedValue[] {
  return trials
    .filter((trial) => trial.variant === variant && trial.workload === objective.workload)
    .map((trial) => ({ value: metricValue(trial.metrics, objective.metric), block: stratumOf(trial) }))
    .filter((entry) => Number.isFinite(entry.value));
}

export interface BestOptions {
  /** Race eliminations, shown in the ranking (an eliminated config ranks after every surviving one). */
  eliminations?: readonly Elimination[];
  /** The plan's schedule is blocked: configs are compared within passes (see compareBlocked). */
  blocked?: boolean;
  /** quality.equivalence's verdicts (equivalence.ts): each config's status (feasibility.ts) and token agreement, for subjectTo.outputMatch. */
  equivalence?: EquivalenceReport;
  /** Each config's quality.accuracy share (accuracy.ts `accuracies`), for subjectTo.accuracy. */
  accuracy?: ReadonlyMap<string, number>;
}

/** subjectTo.outputMatch broken by a config, or unproven (its answers were not compared): a changed config is not a win. */
export function outputMatchViolations(objective: Objective, outputMatch: ReadonlyMap<string, number> | undefined, variant: string): string[] {
  const constraint = objective.outputMatch;
  if (!constraint) return [];
  const value = outputMatch?.get(variant);
  if (value === undefined) return [`outputMatch not measured (needs ${constraint.op} ${constraint.value})`];
  return holds(value, constraint.op, constraint.value) ? [] : [`outputMatch ${value.toFixed(3)} (needs ${constraint.op} ${constraint.value})`];
}

/**
 * subjectTo.accuracy broken by a config, or unproven (it was not scored; a relative limit also needs the baseline's
 * score): a faster config that answers worse is not a win.
 */
export function accuracyViolations(objective: Objective, accuracy: ReadonlyMap<string, number> | undefined, variant: string, baseline: string): string[] {
  const constraint = objective.accuracy;
  if (!constraint) return [];
  const relative = 'baselineOffset' in constraint;
  const needs = relative ? `needs ${constraint.op} baseline ${formatPoints(constraint.baselineOffset)}` : `needs ${constraint.op} ${constraint.value}`;
  const value = accuracy?.get(variant);
  const limit = relative ? accuracy?.get(baseline) : constraint.value;
  if (value === undefined || limit === undefined) return [`accuracy not measured (${needs})`];
  const threshold = relative ? limit + constraint.baselineOffset : limit;
  // A tolerance of rounding: 0.81 − 0.01 is 0.7999…, and an accuracy of exactly 0.8 meets ">= baseline - 1%".
  return holds(value, constraint.op, threshold + (constraint.op.startsWith('>') ? -1e-9 : 1e-9))
    ? []
    : [`accuracy ${value.toFixed(3)} (${needs}${relative ? ` = ${threshold.toFixed(3)}` : ''})`];
}

/** Constraints a config's medians break on the objective's workload. */
export function constraintViolations(constraints: readonly Constraint[], workload: string, trials: readonly TrialRecord[], variant: string): string[] {
  return constraints.flatMap((constraint) => {
    const values = trials
      .filter((trial) => trial.variant === variant && trial.workload === workload)
      .map((trial) => metricValue(trial.metrics, constraint.metric))
      .filter((value) => Number.isFinite(value));
    if (values.length === 0) return [];
    const value = median(values);
    return holds(value, constraint.op, constraint.value) ? [] : [`${constraint.metric} ${figure(value)} (needs ${constraint.op} ${constraint.value})`];
  });
}

/**
 * Which config is best on the objective, and how sure that is: ranking by median (a race's eliminated configs
 * after the survivors: each was shown significantly worse than one of them), the winner's effect and CI vs the
 * baseline and vs the runner-up, and a pairwise matrix of Holm-corrected rank-sum tests between all configs.
 */
export function bestConfig(
  experiment: ResolvedExperiment,
  trials: readonly TrialRecord[],
  { eliminations = [], blocked = false, equivalence, accuracy }: BestOptions = {},
): BestVerdict {
  const objective = objectiveOf(experiment);
  const sign = objective.direction === 'maximize' ? 1 : -1;
  const strata = comparisonStrata(trials, blocked);
  const compareOptions = {
    ...experiment.verdict,
    seed: experiment.seed,
    higherIsBetter: objective.direction === 'maximize',
    blocked: strata.blocked,
  };
  const feasibility = configFeasibility(experiment, trials, { ...(equivalence && { equivalence }), ...(accuracy && { accuracy }) });
  const rows = feasibility.map(({ variant, ...judged }) => {
    const values = objectiveValues(objective, trials, variant, strata.stratumOf);
    const eliminated = eliminations.find((entry) => entry.variant === variant);
    return {
      variant,
      values,
      median: values.length > 0 ? median(values.map((entry) => entry.value)) : null,
      n: values.length,
      ...judged,
      ...(eliminated && { eliminated: { afterPass: eliminated.afterPass, reason: eliminated.reason } }),
    };
  });
  const score = (row: (typeof rows)[number]): number => (row.median === null ? Number.NEGATIVE_INFINITY : sign * row.median);
  rows.sort((a, b) => Number(b.feasible) - Number(a.feasible) || Number(!b.eliminated) - Number(!a.eliminated) || score(b) - score(a));
  const ranking: RankedConfig[] = rows.map(({ values: _values, ...row }, index) => ({ ...row, rank: index + 1 }));

  const matrix = pairwiseMatrix(rows, compareOptions);
  const feasible = rows.filter((row) => row.feasible && row.n > 0);
  const winner = feasible[0];
  const runnerUp = feasible[1];
  const base = rows.find((row) => row.variant === experiment.baseline);
  const floorWarning = outputMatchFloorWarning(objective, equivalence);
  const verdict: BestVerdict = { objective, ranking, clear: false, matrix, conclusion: '', warnings: floorWarning ? [floorWarning] : [] };
  if (!winner) return { ...verdict, conclusion: "no config meets the objective's constraints (or none was measured)" };
  verdict.winner = winner.variant;
  const winnerRow = matrix[rows.indexOf(winner)]!;
  const holm = (other: (typeof rows)[number]): HolmVerdict =>
    holmVerdict(compareSamples(other.values, winner.values, compareOptions), winnerRow.find((cell) => cell.column === other.variant)!);
  if (base && base !== winner) verdict.vsBaseline = holm(base);
  if (runnerUp) {
    verdict.runnerUp = runnerUp.variant;
    verdict.vsRunnerUp = holm(runnerUp);
  }
  const others = winnerRow.filter((cell) => cell.column !== winner.variant && feasible.some((row) => row.variant === cell.column));
  verdict.clear = others.every((cell) => cell.better);
  verdict.conclusion = !runnerUp
    ? `${winner.variant} is the only config that meets the objective`
    : verdict.clear
      ? `${winner.variant} is the best config: significantly better than every other (Holm-corrected, α = ${experiment.verdict.alpha})`
      : `${winner.variant} ranks first, but is not significantly better than ${others
          .filter((cell) => !cell.better)
          .map((cell) => cell.column)
          .join(', ')}`;
  const bounded = [winner, runnerUp].flatMap((row) => (row ? atSearchMax(objective, trials, row.variant) : []));
  if (bounded.length > 0) verdict.conclusion += `; ${bounded.join('; ')}`;
  const passedOver = rows.filter((row) => !row.feasible && !row.eliminated && row.median !== null && score(row) > score(winner));
  if (passedOver.length > 0) {
    verdict.conclusion += `; better on ${objective.metric} but infeasible: ${passedOver.map((row) => `${row.variant} (${row.violations[0]})`).join(', ')}`;
  }
  return verdict;
}

/**
 * Each config's feasibility under the experiment's objective: its constraints on the objective's workload, its
 * answers (the status table in feasibility.ts, subjectTo.outputMatch) and its accuracy. The ranking and every
 * verdict row read this one judgement.
 */
export function configFeasibility(
  experiment: ResolvedExperiment,
  trials: readonly TrialRecord[],
  { equivalence, accuracy }: Pick<BestOptions, 'equivalence' | 'accuracy'> = {},
): ConfigFeasibility[] {
  const objective = objectiveOf(experiment);
  const outputMatch = equivalence && outputMatches(equivalence);
  return experiment.variants.map((variant) => {
    const outputs = outputsFeasibility(objective, equivalence, variant.name);
    const violations = [
      ...constraintViolations(objective.constraints, objective.workload, trials, variant.name),
      ...outputs.violations,
      ...outputMatchViolations(objective, outputMatch, variant.name),
      ...accuracyViolations(objective, accuracy, variant.name, experiment.baseline),
    ];
    return { variant: variant.name, feasible: violations.length === 0, violations, caveats: violations.length === 0 ? outputs.caveats : [] };
  });
}

/** The winner's verdict against another config, its significance taken from the Holm-corrected matrix cell. */
function holmVerdict(verdict: Verdict, cell: PairwiseCell): HolmVerdict {
  const significant = cell.better || cell.worse;
  const label = verdict.label === 'insufficient data' ? verdict.label : significant ? (cell.better ? 'faster' : 'slower') : 'no significant difference';
  return { ...verdict, significant, label, pAdjusted: cell.pAdjusted };
}

/**
 * A capacity search that met the SLOs at every step, max included, gives max: a lower bound, not the config's
 * capacity. When most of a config's trials did, its median is that bound and the ranking cannot tell it from another
 * config at max: said next to the conclusion, with the next step.
 */
function atSearchMax(objective: Objective, trials: readonly TrialRecord[], variant: string): string[] {
  if (objective.metric !== 'sloCapacity') return [];
  const searches = trials.filter((trial) => trial.variant === variant && trial.workload === objective.workload && trial.metrics.capacity);
  const bounded = searches.filter((trial) => trial.metrics.capacity!.upper === undefined && trial.metrics.capacity!.value > 0).length;
  return bounded * 2 > searches.length
    ? [`${variant}'s capacity is the search's max in ${bounded} of ${searches.length} trials (≥ max): raise max to rank it`]
    : [];
}

function pairwiseMatrix(rows: ReadonlyArray<{ variant: string; values: BlockedValue[] }>, options: CompareOptions & { blocked: boolean }): PairwiseCell[][] {
  const pairs: Array<{ i: number; j: number; verdict: Verdict }> = [];
  for (let i = 0; i < rows.length; i += 1) {
    for (let j = i + 1; j < rows.length; j += 1) pairs.push({ i, j, verdict: compareSamples(rows[j]!.values, rows[i]!.values, options) });
  }
  const tested = pairs.filter((pair) => pair.verdict.pValue !== null);
  const adjusted = holmAdjust(tested.map((pair) => pair.verdict.pValue!));
  const adjustedOf = new Map(tested.map((pair, index) => [pair, adjusted[index]!]));
  const cells: PairwiseCell[][] = rows.map((row) => rows.map((column) => emptyCell(row.variant, column.variant)));
  for (const pair of pairs) {
    const { ratio, ciLow, ciHigh, pValue } = pair.verdict;
    const pAdjusted = adjustedOf.get(pair) ?? null;
    const ciExcludesOne = ciLow !== null && ciHigh !== null && (ciLow > 1 || ciHigh < 1);
    const bigEnough = ratio !== null && Math.abs(ratio - 1) >= (options.minEffect ?? 0);
    const significant = pAdjusted !== null && pAdjusted < options.alpha && ciExcludesOne && bigEnough;
    const rowBetter = ratio !== null && (options.higherIsBetter ? ratio > 1 : ratio < 1);
    cells[pair.i]![pair.j] = {
      row: rows[pair.i]!.variant,
      column: rows[pair.j]!.variant,
      ratio,
      ciLow,
      ciHigh,
      pValue,
      pAdjusted,
      better: significant && rowBetter,
      worse: significant && !rowBetter,
    };
    cells[pair.j]![pair.i] = {
      row: rows[pair.j]!.variant,
      column: rows[pair.i]!.variant,
      ratio: ratio === null ? null : 1 / ratio,
      ciLow: ciHigh === null ? null : 1 / ciHigh,
      ciHigh: ciLow === null ? null : 1 / ciLow,
      pValue,
      pAdjusted,
      better: significant && !rowBetter,
      worse: significant && rowBetter,
    };
  }
  return cells;
}

function emptyCell(row: string, column: string): PairwiseCell {
  return { row, column, ratio: null, ciLow: null, ciHigh: null, pValue: null, pAdjusted: null, better: false, worse: false };
}

function figure(value: number): string {
  return Math.abs(value) >= 100 ? value.toFixed(0) : value.toFixed(1);
}
