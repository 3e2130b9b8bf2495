import { median } from 'simple-statistics';
import type { TrialRecord } from '../../store/types.js';
import type { ResolvedExperiment } from '../spec/types.js';
import { accuracyViolations, constraintViolations, type Elimination, objectiveOf, objectiveValues, outputMatchViolations } from './best.js';
import { type EquivalenceReport, outputMatches } from './equivalence.js';
import { outputsFeasibility } from './feasibility.js';
import { holmAdjust } from './holm.js';
import { comparisonStrata } from './lanes.js';
import { compareSamples } from './verdict.js';

export interface RaceDecision {
  eliminate: Elimination[];
  /** Set when the race is decided: one config is left, significantly better than every other. */
  winner?: string;
}

/**
 * One racing step after a pass: configs breaking a constraint are dropped, then every remaining config is tested
 * against the current best (rank-sum, Holm-corrected over the comparisons of this step) and dropped when
 * significantly worse (p and the bootstrap CI agree, effect ≥ minEffect). Fewer than two trials: no test yet.
 * A blocked schedule is tested within passes (stratified), so the drift between passes cancels, and only from its
 * second (reversed) pass on.
 */
export function raceStep(
  experiment: ResolvedExperiment,
  trials: readonly TrialRecord[],
  eliminated: ReadonlySet<string>,
  afterPass: number,
  blocked: boolean,
  /** quality.equivalence's verdicts: each config's status (feasibility.ts) and token agreement (subjectTo.outputMatch). */
  equivalence?: EquivalenceReport,
  /** quality.accuracy's share per config (subjectTo.accuracy). */
  accuracy?: ReadonlyMap<string, number>,
): RaceDecision {
  // After the first pass of a blocked schedule each config was measured in its own stretch of time, so a drift of
  // the machine is indistinguishable from a difference of configs: nothing is decided before the reversed pass.
  if (blocked && afterPass < 1) return { eliminate: [] };
  const objective = objectiveOf(experiment);
  const outputMatch = equivalence && outputMatches(equivalence);
  const eliminate: Elimination[] = [];
  const strata = comparisonStrata(trials, blocked);
  const remaining = experiment.variants
    .map((variant) => ({ variant: variant.name, values: objectiveValues(objective, trials, variant.name, strata.stratumOf) }))
    .filter((entry) => !eliminated.has(entry.variant) && entry.values.length > 0);
  const feasible = remaining.filter((entry) => {
    const violations = [
      ...(entry.values.length >= 2 ? constraintViolations(objective.constraints, objective.workload, trials, entry.variant) : []),
      ...outputsFeasibility(objective, equivalence, entry.variant).violations,
      ...outputMatchViolations(objective, outputMatch, entry.variant),
      ...accuracyViolations(objective, accuracy, entry.variant, experiment.baseline),
    ];
    if (violations.length > 0) eliminate.push({ variant: entry.variant, afterPass, reason: `breaks ${violations.join('; ')}` });
    return violations.length === 0;
  });
  const sign = objective.direction === 'maximize' ? 1 : -1;
  const medianOf = (entry: (typeof feasible)[number]): number => median(entry.values.map((sample) => sample.value));
  feasible.sort((a, b) => sign * (medianOf(b) - medianOf(a)));
  const best = feasible[0];
  if (!best) return { eliminate };
  const options = {
    ...experiment.verdict,
    seed: experiment.seed,
    higherIsBetter: objective.direction === 'maximize',
    blocked: strata.blocked,
  };
  const tests = feasible.slice(1).map((entry) => ({ entry, verdict: compareSamples(entry.values, best.values, options) }));
  const testable = tests.filter((test) => test.verdict.pValue !== null);
  const adjusted = holmAdjust(testable.map((test) => test.verdict.pValue!));
  let survivors = 1 + tests.length - testable.length;
  testable.forEach((test, index) => {
    const { ratio, ciLow, ciHigh } = test.verdict;
    const ciExcludesOne = ciLow !== null && ciHigh !== null && (ciLow > 1 || ciHigh < 1);
    const bigEnough = ratio !== null && Math.abs(ratio - 1) >= experiment.verdict.minEffect;
    if (adjusted[index]! < experiment.verdict.alpha && ciExcludesOne && bigEnough) {
      const change = (1 / ratio! - 1) * 100;
      eliminate.push({
        variant: test.entry.variant,
        afterPass,
        reason: `${change >= 0 ? '+' : '−'}${Math.abs(change).toFixed(1)}% vs best ${best.variant} (Holm-adjusted p ${adjusted[index]!.toFixed(3)}, n ${test.verdict.n.baseline}/${test.verdict.n.candidate})`,
      });
    } else {
      survivors += 1;
    }
  });
  return survivors === 1 && experiment.variants.length > 1 ? { eliminate, winner: best.variant } : { eliminate };
}
