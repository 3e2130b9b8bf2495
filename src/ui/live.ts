/** Live charts of a running experiment: per-trial figures over time plus the throughput of the trial in flight. */
import { timelineChart, type XYSeries } from '../report/charts.js';
import type { Figure } from '../report/figures.js';
import type { TrialRecord } from '../store/types.js';

/** Throughput of the trial in flight as the UI saw it, sampled whenever the runner updated its progress row. */
export interface ProgressPoint {
  atMs: number;
  outputTokensPerSecond: number;
}

/** Trials are independent measurements (different workloads interleave), so they are drawn as points, not lines. */
export function liveFigures(runStartedAt: string, trials: TrialRecord[], inFlight: ProgressPoint[]): Figure[] {
  const start = Date.parse(runStartedAt);
  const seconds = (iso: string | number): number => Math.round(((typeof iso === 'number' ? iso : Date.parse(iso)) - start) / 100) / 10;
  const perVariant = (value: (trial: TrialRecord) => number | undefined): XYSeries[] => {
    const series = new Map<string, XYSeries>();
    for (const trial of trials) {
      const y = value(trial);
      if (y === undefined || !Number.isFinite(y)) continue;
      const line = series.get(trial.variant) ?? { name: trial.variant, points: [], pointsOnly: true };
      line.points.push([seconds(trial.finishedAt), y]);
      series.set(trial.variant, line);
    }
    return [...series.values()];
  };
  const throughput = perVariant((trial) => trial.metrics.outputTokensPerSecond);
  if (inFlight.length > 0) throughput.push({ name: 'trial in flight', points: inFlight.map((point) => [seconds(point.atMs), point.outputTokensPerSecond]) });
  const latency = perVariant((trial) => trial.metrics.ttftMedianMs);
  const figures: Figure[] = [];
  if (throughput.length > 0) figures.push({ id: 'live-throughput', title: 'Throughput per trial', svg: timelineChart('Output tok/s per trial (live)', 'tok/s', throughput) });
  if (latency.length > 0) figures.push({ id: 'live-ttft', title: 'TTFT per trial', svg: timelineChart('Median TTFT per trial (live)', 'ms', latency) });
  return figures;
}
