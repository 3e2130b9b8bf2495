/**
 * Chart data of a run report, from stored trials: per-trial values in run order, medians per workload, latency
 * CDFs, acceptance against the speculation depth. Pure; the report model (./model.ts) assembles them.
 */
import { median } from 'simple-statistics';
import { metricValue } from '../experiment/spec/metrics.js';
import type { TrialSlot } from '../experiment/spec/trial-number.js';
import type { MetricName, Plan } from '../experiment/spec/types.js';
import type { TrialRecord } from '../store/types.js';
import type { BlockSpan, CdfSeries, XYSeries } from './charts.js';
import type { RunData } from './model.js';

/** One workload's trials as measured, x = trial number (run order), one series per variant, with the plan's blocks. */
export interface TrialOrderSeries {
  workload: string;
  /** The metric the workload is judged on (a capacity workload's is sloCapacity). */
  metric: MetricName;
  series: XYSeries[];
  blocks: BlockSpan[];
  /** Planned trials of the whole run: the x axis spans them all, so charts of workloads line up. */
  total: number;
}

export function metricValues(trials: readonly TrialRecord[], variant: string, workload: string, metric: MetricName): number[] {
  return trials
    .filter((trial) => trial.variant === variant && trial.workload === workload)
    .map((trial) => metricValue(trial.metrics, metric))
    .filter(Number.isFinite);
}

/**
 * Every counted trial at its run-order position: an outlier that flips a 4-vs-4 verdict, or a slow block, shows
 * here and nowhere in a median. A chart per workload: their scales differ (one stream vs 32).
 */
export function trialOrderSeries(
  workloads: string[],
  variants: string[],
  trials: readonly TrialRecord[],
  plan: Pick<Plan, 'trials'>,
  numberOf: (slot: TrialSlot) => number | undefined,
  metricOf: (workload: string) => MetricName,
): TrialOrderSeries[] {
  const blocks = new Map<number, BlockSpan>();
  for (const planned of plan.trials) {
    const span = blocks.get(planned.block) ?? { block: planned.block, from: planned.index + 1, to: planned.index + 1 };
    span.from = Math.min(span.from, planned.index + 1);
    span.to = Math.max(span.to, planned.index + 1);
    blocks.set(planned.block, span);
  }
  return workloads.flatMap((workload) => {
    const metric = metricOf(workload);
    const series = variants.flatMap((variant): XYSeries[] => {
      const points = trials
        .filter((trial) => trial.variant === variant && trial.workload === workload)
        .flatMap((trial): Array<[number, number]> => {
          const position = numberOf(trial);
          const value = metricValue(trial.metrics, metric);
          return position !== undefined && Number.isFinite(value) ? [[position, value]] : [];
        })
        .sort((a, b) => a[0] - b[0]);
      return points.length > 0 ? [{ name: variant, points, pointsOnly: true }] : [];
    });
    return series.length > 0 ? [{ workload, metric, series, blocks: [...blocks.values()].sort((a, b) => a.block - b.block), total: plan.trials.length }] : [];
  });
}

/** A metric's median per workload and variant (tok/s, a capacity); workloads are categories (single-stream, c=8), drawn as bars. */
export function medianSeries(
  workloads: string[],
  variants: string[],
  trials: readonly TrialRecord[],
  metric: MetricName,
): { categories: string[]; series: XYSeries[] } {
  const series = variants.map((variant) => ({
    name: variant,
    points: workloads.flatMap((workload): Array<[string, number]> => {
      const values = metricValues(trials, variant, workload, metric);
      return values.length > 0 ? [[workload, median(values)]] : [];
    }),
  }));
  return { categories: workloads, series: series.filter((line) => line.points.length > 0) };
}

/** CDFs at the heaviest workload that has samples: where variants differ most in queueing. */
export function latencySeries(workloads: string[], variants: string[], data: RunData): { workload: string; ttft: CdfSeries[]; e2e: CdfSeries[] } | undefined {
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
 * parameter the variants themselves are the x axis (categories: the chart draws bars).
 */
export function acceptanceSeries(workloads: string[], trials: readonly TrialRecord[]): { parameter: string; series: XYSeries[] } | undefined {
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
