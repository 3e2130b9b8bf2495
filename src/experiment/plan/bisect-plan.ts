import { CURRENT_VARIANT, REFERENCE_VARIANT, type SubsetTest, subsetVariantName, worstCaseTests } from '../analysis/bisect.js';
import type { SettableDifference } from '../analysis/bisect-differences.js';
import { withDifferences } from '../analysis/bisect-differences.js';
import { serverKeyOf } from '../spec/load.js';
import type { MetricName, ResolvedExperiment, ResolvedVariant } from '../spec/types.js';
import type { CostModel, PlanPrediction } from './budget.js';
import { chooseSchedule } from './schedule.js';

export interface BisectDesign {
  /** The current run's experiment (secrets filled): its variant `variant` is what the rounds vary. */
  base: ResolvedExperiment;
  bisectId: number;
  variant: string;
  workload: string;
  differences: readonly SettableDifference[];
  tolerance: number;
  trials: number;
  metric: MetricName;
}

/**
 * One round as an experiment: the current configuration (the baseline its verdicts compare with), the reference
 * one, and each subset test as the current configuration with that subset restored; every difference is set
 * explicitly, so the round does not depend on the shell it runs from. Blocks interleave the configurations (each
 * block or pass measures every one), so a slow drift of the machine touches all of them alike. Quality checks,
 * races, objectives and the file's budget are the file's business, not a bisect's: left out.
 */
export function roundExperiment(design: BisectDesign, round: number, tests: readonly SubsetTest[]): ResolvedExperiment {
  const { base } = design;
  const source = base.variants.find((variant) => variant.name === design.variant)!;
  const workload = base.workloads.find((candidate) => candidate.label === design.workload)!;
  const variantOf = (name: string, restored: readonly string[]): ResolvedVariant => {
    const server = withDifferences(source.server, design.differences, new Set(restored));
    return { name, params: {}, server, serverKey: serverKeyOf(server), client: source.client };
  };
  const all = design.differences.map((difference) => difference.name);
  const { maxRestarts: _maxRestarts, objective: _objective, quality: _quality, budget, ...rest } = base;
  return {
    ...rest,
    name: bisectExperimentName(base.name, design.bisectId),
    description: `servelab bisect ${design.bisectId}, round ${round}: which differences of ${design.variant} cost the ${base.metric}`,
    baseline: CURRENT_VARIANT,
    metric: design.metric,
    variants: [
      variantOf(CURRENT_VARIANT, []),
      variantOf(REFERENCE_VARIANT, all),
      ...tests.map((test) => variantOf(subsetVariantName(test.members), test.members)),
    ],
    workloads: [workload],
    trials: design.trials,
    // The file's schedule: where a start is expensive (blocked), each configuration starts once per pass, and the
    // passes interleave them (at least two, so no configuration owns a stretch of the machine's time alone).
    schedule: base.schedule ?? 'interleaved',
    passes: Math.max(2, base.passes ?? 2),
    stopping: 'fixed',
    verdict: { alpha: base.verdict.alpha, minEffect: design.tolerance },
    ...(budget && { budget: { gpusPerServer: budget.gpusPerServer } }),
  };
}

/** The rounds' runs are one experiment of their own: the drift history and the reference guard stay apart from the file's. */
export function bisectExperimentName(name: string, bisectId: number): string {
  return `${name} (bisect ${bisectId})`;
}

export interface BisectPrediction {
  round1: PlanPrediction;
  /** Round 1's schedule (every round has the same). */
  schedule: 'interleaved' | 'blocked';
  /** Worst case (every half tested matters): rounds, configurations measured over all rounds, trials. */
  worst: { rounds: number; configurations: number; trials: number; wallMs: number | undefined; gpuHours: number | undefined };
  /** Testing each difference alone against the same two configurations: n + 2 configurations, one round. */
  oneAtATime: { configurations: number; trials: number; wallMs: number | undefined; gpuHours: number | undefined };
}

/**
 * What the bisect will cost, before it starts: round 1 costed like `servelab plan` (history, else declared costs),
 * the worst case and one-at-a-time testing scaled from round 1's cost per configuration and block.
 */
export function predictBisect(
  design: BisectDesign,
  round1Tests: readonly SubsetTest[],
  costs: (experiment: ResolvedExperiment) => CostModel,
): BisectPrediction {
  const experiment = roundExperiment(design, 1, round1Tests);
  const choice = chooseSchedule(experiment, costs(experiment));
  const round1 = choice.prediction;
  const n = design.differences.length;
  const worst = worstCaseTests(n);
  const perConfiguration = (total: number | undefined): number | undefined => (total === undefined ? undefined : total / experiment.variants.length);
  const scaled = (configurations: number) => {
    const wallMs = perConfiguration(round1.wallMs);
    const gpuHours = perConfiguration(round1.gpuHours);
    return {
      configurations,
      trials: configurations * design.trials,
      wallMs: wallMs === undefined ? undefined : wallMs * configurations,
      gpuHours: gpuHours === undefined ? undefined : gpuHours * configurations,
    };
  };
  return {
    round1,
    schedule: choice.schedule,
    worst: { rounds: worst.rounds, ...scaled(2 * worst.rounds + worst.tests) },
    oneAtATime: scaled(n + 2),
  };
}
