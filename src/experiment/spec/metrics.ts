import type { CategoryResult, LevelResult } from '../../load/types.js';
import type { CategoryMetrics, TrialMetrics } from '../../store/types.js';
import type { MetricName } from './types.js';

/** The figures of one measured level that a trial keeps (samples are stored separately). */
export function trialMetricsOf(level: LevelResult): TrialMetrics {
  return {
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
    ...(level.spec?.acceptanceByPosition && { acceptanceByPosition: level.spec.acceptanceByPosition }),
    ...(level.outputLength && level.outputLength.shortRequests > 0 && { outputLength: level.outputLength }),
    ...(level.tokenCounts && {
      tokenCounts: { method: level.tokenCounts.method, checked: level.tokenCounts.checked, disagreeing: level.tokenCounts.disagreeing },
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
    ...(level.categories && { byCategory: Object.fromEntries(level.categories.map((category) => [category.category, categoryMetricsOf(category)])) }),
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

/** Latencies (…Ms) improve downwards, rates upwards. */
export function higherIsBetter(metric: MetricName): boolean {
  return !metric.endsWith('Ms');
}

export function metricUnit(metric: MetricName): string {
  if (metric.endsWith('Ms')) return 'ms';
  if (metric === 'requestsPerSecond') return 'req/s';
  if (metric === 'perStreamTokensPerSecond') return 'tok/s/stream';
  if (metric === 'outputTokensPerSecond') return 'tok/s';
  return '';
}

/** A metric value of a stored trial; NaN when the trial could not measure it (e.g. no request completed). */
export function metricValue(metrics: TrialMetrics, metric: MetricName): number {
  const value = metrics[metric];
  return typeof value === 'number' && Number.isFinite(value) ? value : Number.NaN;
}
