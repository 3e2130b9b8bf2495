/** The report's chart series (throughput per workload, latency CDFs, acceptance against the speculation depth). */
import { median } from 'simple-statistics';
import { metricValue } from '../experiment/spec/metrics.js';
import type { MetricName } from '../experiment/spec/types.js';
import type { TrialRecord } from '../store/types.js';
import type { RunData, RunReport } from './model.js';

export function metricValues(trials: TrialRecord[], variant: string, workload: string, metric: MetricName): number[] {
  return trials
    .filter((trial) => trial.variant === variant && trial.workload === workload)
    .map((trial) => metricValue(trial.metrics, metric))
    .filter(Number.isFinite);
}

export function throughputSeries(workloads: string[], variants: string[], trials: TrialRecord[]): RunReport['throughput'] {
  const series = variants.map((variant) => ({
    name: variant,
    points: workloads.flatMap((workload): Array<[string, number]> => {
      const values = metricValues(trials, variant, workload, 'outputTokensPerSecond');
      return values.length > 0 ? [[workload, median(values)]] : [];
    }),
  }));
  return { categories: workloads, series: series.filter((line) => line.points.length > 0) };
}

/** CDFs at the heaviest workload that has samples: where variants differ most in queueing. */
export function latencySeries(workloads: string[], variants: string[], data: RunData): RunReport['latency'] {
  for (const workload of [...workloads].reverse()) {
    const perVariant = variants.map((variant) => {
      const ids = data.trials.filter((trial) => trial.variant === variant && trial.workload === workload).map((trial) => trial.id);
      const latencies = ids.map((id) => data.latencies.get(id)).filter((entry) => entry !== undefined);
      return { name: variant, ttft: latencies.flatMap((entry) => entry.ttftMs), e2e: latencies.flatMap((entry) => entry.e2eMs) };
    });
    if (perVariant.some((entry) => entry.ttft.length > 0 || entry.e2e.length > 0)) {
      return {
        workload,
        ttft: perVariant.filter((entry) => entry.ttft.length > 0).map((entry) => ({ name: entry.name, values: entry.ttft })),
        e2e: perVariant.filter((entry) => entry.e2e.length > 0).map((entry) => ({ name: entry.name, values: entry.e2e })),
      };
    }
  }
  return undefined;
}

/**
 * Median acceptance rate against the sweep parameter that sets the speculation depth. The parameter is the
 * numeric one named like "steps" (else like "draft"/"tokens", else the first numeric one); without any numeric
 * parameter the variants themselves are the x axis.
 */
export function acceptanceSeries(workloads: string[], trials: TrialRecord[]): RunReport['acceptance'] {
  const measured = trials.filter((trial) => typeof trial.metrics.acceptanceRate === 'number' && Number.isFinite(trial.metrics.acceptanceRate));
  if (measured.length === 0) return undefined;
  const numericKeys = [...new Set(measured.flatMap((trial) => Object.keys(trial.params)))].filter((key) =>
    measured.every(
      (trial) =>
        typeof trial.params[key] === 'number' ||
        (typeof trial.params[key] === 'string' && trial.params[key] !== '' && Number.isFinite(Number(trial.params[key]))),
    ),
  );
  const parameter = numericKeys.find((key) => /step/i.test(key)) ?? numericKeys.find((key) => /draft|token|spec/i.test(key)) ?? numericKeys[0];
  const xOf = (trial: TrialRecord): number | string => (parameter === undefined ? trial.variant : Number(trial.params[parameter]));
  const series = workloads.flatMap((workload) => {
    const groups = new Map<number | string, number[]>();
    for (const trial of measured.filter((candidate) => candidate.workload === workload)) {
      const x = xOf(trial);
      groups.set(x, [...(groups.get(x) ?? []), trial.metrics.acceptanceRate!]);
    }
    return groups.size > 0 ? [{ name: workload, points: [...groups].map(([x, values]): [number | string, number] => [x, median(values)]) }] : [];
  });
  return { parameter: parameter ?? 'variant', series };
}
