import type { CategoryResult, LevelResult } from '../../load/types.js';
import type { CategoryMetrics, TrialMetrics } from '../../store/types.js';
import { meanPowerW } from '../../telemetry/energy.js';
import type { GpuSample } from '../../telemetry/types.js';
import type { MetricName, ResolvedWorkload } from './types.js';

/** What turns a level's throughput into energy and money: the GPU readings of its trial, the price of a GPU hour. */
export interface EfficiencyInputs {
  gpuSamples?: readonly GpuSample[];
  cost?: { gpuHourUsd: number; gpus: number };
}

/** The figures of one measured level that a trial keeps (samples are stored separately). */
export function trialMetricsOf(level: LevelResult, efficiency: EfficiencyInputs = {}): TrialMetrics {
  return {
    ...efficiencyOf(level, efficiency),
    outputTokensPerSecond: level.outputTokensPerSecond,
    requestsPerSecond: level.requestsPerSecond,
    perStreamTokensPerSecond: level.outputTokensPerSecondPerStream.median,
    ttftMedianMs: level.ttftMs.median,
    ttftP99Ms: level.ttftMs.p99,
    tpotMedianMs: level.tpotMs.median,
    itlP99Ms: level.itlMs.p99,
    e2eMedianMs: level.e2eMs.median,
    completed: level.completed,
    failed: level.failed,
    ...(level.spec?.acceptanceRate !== undefined && { acceptanceRate: level.spec.acceptanceRate }),
    ...(level.spec?.meanAcceptedLength !== undefined && { meanAcceptedLength: level.spec.meanAcceptedLength }),
    ...(level.spec?.adaptiveTier && { specNumSteps: level.spec.adaptiveTier.numSteps, specNumDraftTokens: level.spec.adaptiveTier.numDraftTokens }),
    ...(level.prefixCache && { prefixCacheHitRate: level.prefixCache.hitRate }),
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
    ...(level.spec?.verifyStepMs !== undefined && { verifyStepMs: level.spec.verifyStepMs }),
    ...(level.capacity && { sloCapacity: level.capacity.value, capacity: level.capacity }),
    ...(level.categories && { byCategory: Object.fromEntries(level.categories.map((category) => [category.category, categoryMetricsOf(category)])) }),
  };
}

/** TTFT p50 by turn as a dense list (a turn no request completed is left out of the ones after it: turns are 1..n). */
function turnMetrics(turns: NonNullable<LevelResult['turns']>): Partial<TrialMetrics> {
  const byTurn: number[] = [];
  for (const entry of turns.ttftByTurn) if (entry.turn === byTurn.length + 1) byTurn.push(entry.p50Ms);
  return { ttftMedianByTurnMs: byTurn, ...(turns.endedByFailure > 0 && { sessionsEndedByFailure: turns.endedByFailure }) };
}

/**
 * Joules per output token = the GPUs' mean power over the level / its output tokens per second (energy and tokens
 * over the same span); dollars per million output tokens = the GPUs' hourly price / tokens per hour.
 */
function efficiencyOf(level: LevelResult, { gpuSamples, cost }: EfficiencyInputs): Partial<TrialMetrics> {
  const rate = level.outputTokensPerSecond;
  if (!(rate > 0)) return {};
  // The level's span on the wall clock: first send to last completion (e2e counts from the scheduled arrival).
  let from = Number.POSITIVE_INFINITY;
  let to = Number.NEGATIVE_INFINITY;
  for (const sample of level.samples) {
    if (sample.error) continue;
    from = Math.min(from, sample.sentAtMs);
    to = Math.max(to, sample.sentAtMs - (sample.queueMs ?? 0) + (sample.e2eMs ?? 0));
  }
  const power = gpuSamples && from <= to ? meanPowerW(gpuSamples, from, to) : undefined;
  return {
    ...(power && { powerW: power.watts, joulesPerToken: power.watts / rate, tokensPerJoule: rate / power.watts }),
    ...(cost && { usdPerMillionTokens: (cost.gpuHourUsd * cost.gpus * 1e6) / (3600 * rate) }),
  };
}

function categoryMetricsOf(category: CategoryResult): CategoryMetrics {
  return {
    completed: category.completed,
    failed: category.failed,
    outputTokensPerSecond: category.outputTokensPerSecond,
    ttftMedianMs: category.ttftMs.median,
    tpotMedianMs: category.tpotMs.median,
    e2eMedianMs: category.e2eMs.median,
    ...(category.spec?.acceptanceRate !== undefined && { acceptanceRate: category.spec.acceptanceRate }),
    ...(category.spec?.meanAcceptedLength !== undefined && { meanAcceptedLength: category.spec.meanAcceptedLength }),
    ...(category.spec?.verifyStepMs !== undefined && { verifyStepMs: category.spec.verifyStepMs }),
  };
}

/** Latencies (…Ms), energy and cost per token improve downwards, rates upwards. */
export function higherIsBetter(metric: MetricName): boolean {
  return !metric.endsWith('Ms') && metric !== 'joulesPerToken' && metric !== 'usdPerMillionTokens';
}

export function metricUnit(metric: MetricName): string {
  if (metric.endsWith('Ms')) return 'ms';
  if (metric === 'requestsPerSecond') return 'req/s';
  if (metric === 'perStreamTokensPerSecond') return 'tok/s/stream';
  if (metric === 'outputTokensPerSecond') return 'tok/s';
  if (metric === 'joulesPerToken') return 'J/tok';
  if (metric === 'tokensPerJoule') return 'tok/J';
  if (metric === 'usdPerMillionTokens') return '$/Mtok';
  // Which one is the workload's (its name says: capacity:rate=… or capacity:c=…).
  if (metric === 'sloCapacity') return 'req/s or in flight';
  return '';
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
