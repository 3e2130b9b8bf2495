import type { LevelResult } from '../../load/types.js';
import { categoryFiguresOf, figuresOf, type MetricInputs, metricDef } from '../../metrics/catalog.js';
import type { TrialMetrics } from '../../store/types.js';
import { meanPowerW } from '../../telemetry/energy.js';
import type { GpuSample } from '../../telemetry/types.js';
import type { MetricName, ResolvedWorkload } from './types.js';

/** What turns a level's throughput into energy and money: the GPU readings of its trial, the price of a GPU hour. */
export interface EfficiencyInputs {
  gpuSamples?: readonly GpuSample[];
  cost?: { gpuHourUsd: number; gpus: number };
}

/** The figures of one measured level that a trial keeps (samples are stored separately): the catalogue's, then the work's. */
export function trialMetricsOf(level: LevelResult, efficiency: EfficiencyInputs = {}): TrialMetrics {
  return {
    ...figuresOf(level, metricInputs(level, efficiency)),
    completed: level.completed,
    failed: level.failed,
    ...(level.spec?.adaptiveTier && { specNumSteps: level.spec.adaptiveTier.numSteps, specNumDraftTokens: level.spec.adaptiveTier.numDraftTokens }),
    ...(level.prefixCache?.targetHitRate !== undefined && { prefixCacheTargetHitRate: level.prefixCache.targetHitRate }),
    ...(level.turns && turnMetrics(level.turns)),
    ...(level.spec?.acceptanceByPosition && { acceptanceByPosition: level.spec.acceptanceByPosition }),
    ...(level.outputLength && (level.outputLength.shortRequests > 0 || level.outputLength.overLengthRequests) && { outputLength: level.outputLength }),
    ...(level.tokenCounts && {
      tokenCounts: {
        method: level.tokenCounts.method,
        checked: level.tokenCounts.checked,
        disagreeing: level.tokenCounts.disagreeing,
        ...(level.tokenCounts.severalPerEvent && { severalPerEvent: level.tokenCounts.severalPerEvent }),
      },
    }),
    ...(level.resends !== undefined && level.resends > 0 && { resends: level.resends }),
    ...(level.rate && {
      rate: {
        offeredPerSecond: level.rate.offeredPerSecond,
        servedPerSecond: level.rate.servedPerSecond,
        queuedByCap: level.rate.queuedByCap,
        maxLagMs: level.rate.maxLagMs,
      },
    }),
    ...(level.capacity && { capacity: level.capacity }),
    ...(level.categories && {
      byCategory: Object.fromEntries(
        level.categories.map((category) => [category.category, { ...categoryFiguresOf(category), completed: category.completed, failed: category.failed }]),
      ),
    }),
  };
}

/** TTFT p50 by turn as a dense list (a turn no request completed is left out of the ones after it: turns are 1..n). */
function turnMetrics(turns: NonNullable<LevelResult['turns']>): Partial<TrialMetrics> {
  const byTurn: number[] = [];
  for (const entry of turns.ttftByTurn) if (entry.turn === byTurn.length + 1) byTurn.push(entry.p50Ms);
  return { ttftMedianByTurnMs: byTurn, ...(turns.endedByFailure > 0 && { sessionsEndedByFailure: turns.endedByFailure }) };
}

/** The GPUs' mean power over the level's span on the wall clock (first send to last completion), and the GPU price. */
function metricInputs(level: LevelResult, { gpuSamples, cost }: EfficiencyInputs): MetricInputs {
  // e2e counts from the scheduled arrival: the completion is the send less the queueing plus e2e.
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  for (const sample of level.samples) {
    if (sample.error) continue;
    from = Math.min(from, sample.sentAtMs);
    to = Math.max(to, sample.sentAtMs - (sample.queueMs ?? 0) + (sample.e2eMs ?? 0));
  }
  const power = gpuSamples && from <= to ? meanPowerW(gpuSamples, from, to) : undefined;
  return { ...(power && { powerW: power.watts }), ...(cost && { cost }) };
}

/** Latencies, energy and cost per token improve downwards, rates upwards: the catalogue's `better`. */
export function higherIsBetter(metric: MetricName): boolean {
  return metricDef(metric).better === 'higher';
}

export function metricUnit(metric: MetricName): string {
  return metricDef(metric).unit;
}

/** A metric value of a stored trial; NaN when the trial could not measure it (e.g. no request completed). */
export function metricValue(metrics: TrialMetrics, metric: MetricName): number {
  const value = metrics[metric];
  return typeof value === 'number' && Number.isFinite(value) ? value : Number.NaN;
}

/** The workload an objective judges unless it names one: the first, or for sloCapacity the first capacity workload. */
export function defaultObjectiveWorkload(metric: MetricName, workloads: readonly ResolvedWorkload[]): string {
  return ((metric === 'sloCapacity' && workloads.find((workload) => workload.workload.kind === 'capacity')) || workloads[0]!).label;
}
