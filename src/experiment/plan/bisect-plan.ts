import { type BisectConfig, CURRENT_VARIANT, configVariantName, trialsPerConfig, worstCaseRounds } from '../analysis/bisect.js';
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
  /** Trials per arm one-at-a-time testing would need: the precision each effect is estimated with. */
  trials: number;
  /** Passes of a blocked round. */
  passes: number;
  metric: MetricName;
}

/**
 * One round as an experiment: each configuration of the round's design as a variant (`current`, the baseline its
 * verdicts compare with, `reference`, `restore A+B`); every difference is set explicitly, so the round does not
 * depend on the shell it runs from. Each configuration runs trialsPerConfig trials: the design estimates every
 * effect from all of them. A blocked schedule keeps the file's passes (1 by default: on a box where a start is a
 * 15-minute load each configuration starts once; each effect is then a contrast of half the starts with the other
 * half, in the seeded order); an interleaved one runs every configuration once per block. With lanes, a lane
 * takes whole blocks, and the fit gives each lane's block its own level. Quality checks, races,
 * objectives and the file's budget are the file's business, not a bisect's: left out.
 */
export function roundExperiment(design: BisectDesign, round: number, configs: readonly BisectConfig[]): ResolvedExperiment {
  const { base } = design;
  const source = base.variants.find((variant) => variant.name === design.variant)!;
  const workload = base.workloads.find((candidate) => candidate.label === design.workload)!;
  const all = design.differences.map((difference) => difference.name);
  const variantOf = (restored: readonly string[]): ResolvedVariant => {
    const server = withDifferences(source.server, design.differences, new Set(restored));
    return { name: configVariantName(restored, all), params: {}, server, serverKey: serverKeyOf(server), client: source.client };
  };
  // The current configuration first: it is the round's baseline.
  const ordered = [...configs].sort((a, b) => a.members.length - b.members.length);
  // With lanes, each lane measures whole blocks of every configuration: at least a block per lane.
  const lanes = base.lanes?.length ?? 1;
  const trials = Math.max(lanes, trialsPerConfig(design.trials, configs.length));
  const { maxRestarts: _maxRestarts, objective: _objective, quality: _quality, budget, ...rest } = base;
  return {
    ...rest,
    name: bisectExperimentName(base.name, design.bisectId),
    description: `servelab bisect ${design.bisectId}, round ${round}: which differences of ${design.variant} cost the ${base.metric}`,
    baseline: CURRENT_VARIANT,
    metric: design.metric,
    variants: ordered.map((config) => variantOf(config.members)),
    workloads: [workload],
    trials,
    schedule: base.schedule ?? 'interleaved',
    passes: Math.min(trials, Math.max(lanes, design.passes)),
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
  /** Round 1's configurations and trials per configuration. */
  configurations: number;
  trialsPerConfig: number;
  schedule: 'interleaved' | 'blocked';
  /** Rounds and configurations when every group splits (more than 8 differences); 1 round otherwise, plus a round of pairs when an interaction's pair is ambiguous. */
  worst: { rounds: number; configurations: number };
  /** Testing each difference alone beside the current and the reference configuration, `trials` each, costed the same way. */
  oneAtATime: PlanPrediction;
}

/** What the bisect will cost, before it starts: round 1 and one-at-a-time testing costed like `servelab plan`. */
export function predictBisect(design: BisectDesign, round1: readonly BisectConfig[], costs: (experiment: ResolvedExperiment) => CostModel): BisectPrediction {
  const experiment = roundExperiment(design, 1, round1);
  const choice = chooseSchedule(experiment, costs(experiment));
  const names = design.differences.map((difference) => difference.name);
  const singles: BisectConfig[] = [
    { members: [], why: 'screen' },
    { members: names, why: 'screen' },
    ...names.map((name) => ({ members: [name], why: 'screen' as const })),
  ];
  const one = { ...roundExperiment(design, 1, singles), trials: design.trials, passes: Math.min(design.trials, design.passes) };
  const oneChoice = chooseSchedule(one, costs(one));
  return {
    round1: choice.prediction,
    configurations: experiment.variants.length,
    trialsPerConfig: experiment.trials,
    schedule: choice.schedule,
    worst: worstCaseRounds(names.length),
    oneAtATime: oneChoice.prediction,
  };
}
