/** Live charts of a running experiment: per-trial figures over time, one chart per workload, plus the trial in flight. */
import { timelineChart, type XYSeries } from '../report/charts.js';
import type { Figure } from '../report/figures.js';
import type { ProgressRecord } from '../store/reads.js';
import type { TrialRecord } from '../store/types.js';

/** The runner's progress row as the UI saw it, sampled whenever the runner updated it (the in-flight panel shows the last). */
export interface ProgressPoint {
  atMs: number;
  /** progress.trialLabel names the trial in flight: points of one trial share it. */
  progress: ProgressRecord;
}

/**
 * Workloads differ in scale (one stream vs 32), so each gets its own charts: a tok/s line across workloads would
 * read as a trend that is none. Trials are independent measurements, drawn as points per variant, not lines.
 */
export function liveFigures(runStartedAt: string, trials: TrialRecord[], inFlight: ProgressPoint[]): Figure[] {
  const start = Date.parse(runStartedAt);
  const seconds = (iso: string | number): number => Math.round(((typeof iso === 'number' ? iso : Date.parse(iso)) - start) / 100) / 10;
  const perVariant = (ofWorkload: TrialRecord[], value: (trial: TrialRecord) => number | undefined): XYSeries[] => {
    const series = new Map<string, XYSeries>();
    for (const trial of ofWorkload) {
      const y = value(trial);
      if (y === undefined || !Number.isFinite(y)) continue;
      const line = series.get(trial.variant) ?? { name: trial.variant, points: [], pointsOnly: true };
      line.points.push([seconds(trial.finishedAt), y]);
      series.set(trial.variant, line);
    }
    return [...series.values()];
  };
  const workloads = [...new Set(trials.map((trial) => trial.workload))];
  const figures: Figure[] = [];
  workloads.forEach((workload, index) => {
    const ofWorkload = trials.filter((trial) => trial.workload === workload);
    const throughput = perVariant(ofWorkload, (trial) => trial.metrics.outputTokensPerSecond);
    const latency = perVariant(ofWorkload, (trial) => trial.metrics.ttftMedianMs);
    if (throughput.length > 0) {
      figures.push({
        id: `live-throughput-${index}`,
        title: `Throughput per trial: ${workload}`,
        svg: timelineChart(`Output tok/s per trial, ${workload} (live)`, 'tok/s', throughput),
      });
    }
    if (latency.length > 0) {
      figures.push({
        id: `live-ttft-${index}`,
        title: `TTFT per trial: ${workload}`,
        svg: timelineChart(`Median TTFT per trial, ${workload} (live)`, 'ms', latency),
      });
    }
  });
  // Per lane, only its current trial's points: earlier ones belong to other trials, often of other workloads.
  const current = latestPerLane(inFlight);
  const series: XYSeries[] = current.flatMap(({ progress }) => {
    const points = inFlight.filter(
      (point) => point.progress.lane === progress.lane && point.progress.trialLabel === progress.trialLabel && point.progress.outputTokensPerSecond > 0,
    );
    const name = progress.lane === undefined ? 'output tok/s' : `${progress.lane}: ${progress.trialLabel}`;
    return points.length === 0 ? [] : [{ name, points: points.map((point): [number, number] => [seconds(point.atMs), point.progress.outputTokensPerSecond]) }];
  });
  if (series.length > 0) {
    const title = current.length === 1 ? `Trial in flight: ${current[0]!.progress.trialLabel}` : `Trials in flight on ${current.length} lanes`;
    figures.push({ id: 'live-in-flight', title, svg: timelineChart(title.replace('Trial in flight', 'In flight'), 'tok/s', series) });
  }
  return figures;
}

/** The newest point of each lane (one without lanes), in lane order as first seen. */
export function latestPerLane(inFlight: readonly ProgressPoint[]): ProgressPoint[] {
  const latest = new Map<string | undefined, ProgressPoint>();
  for (const point of inFlight) latest.set(point.progress.lane, point);
  return [...latest.values()];
}
