/**
 * The machine-state part of a report: per trial, its telemetry summary lines and time series (GPU SM clock and
 * power, host load, server gauges from /metrics). Pure: stored telemetry in, view model and SVG out.
 */
import type { TrialRecord } from '../store/types.js';
import { formatTelemetrySummary } from '../telemetry/summary.js';
import type { TrialTelemetry } from '../telemetry/types.js';
import { type ChartSize, timelineChart, type XYSeries } from './charts.js';
import { escapeHtml as esc } from './escape.js';

export interface MachineTrial {
  trialId: number;
  label: string;
  lines: string[];
  serverMetricsNote?: string;
  /** x: seconds since the trial started. */
  smClock: XYSeries[];
  power: XYSeries[];
  load: XYSeries[];
  /** Gauges only (running/waiting requests, KV-cache usage…): counters are monotone and say little as a line. */
  serverGauges: XYSeries[];
}

const COUNTER = /_total$/;

/** `numberText`: the trial's number as every view writes it ("trial 3/20"). */
export function machineTrials(
  trials: readonly TrialRecord[],
  telemetry: ReadonlyMap<number, TrialTelemetry>,
  numberText: (trial: TrialRecord) => string,
): MachineTrial[] {
  const views: MachineTrial[] = [];
  for (const trial of trials) {
    const recorded = telemetry.get(trial.id);
    if (!recorded) continue;
    const seconds = (at: number): number => Math.round((at - recorded.startedAt) / 100) / 10;
    const gpuIndexes = [...new Set(recorded.series.gpu.map((sample) => sample.index))].sort((a, b) => a - b);
    const perGpu = (pick: (sample: TrialTelemetry['series']['gpu'][number]) => number | undefined): XYSeries[] =>
      gpuIndexes.map((index) => ({
        name: `GPU ${index}`,
        points: recorded.series.gpu
          .filter((sample) => sample.index === index && pick(sample) !== undefined)
          .map((sample): [number, number] => [seconds(sample.at), pick(sample)!]),
      }));
    const view: MachineTrial = {
      trialId: trial.id,
      label: `${numberText(trial)} · ${trial.variant} · ${trial.workload}`,
      lines: formatTelemetrySummary(recorded.summary),
      smClock: perGpu((sample) => sample.smClockMHz),
      power: perGpu((sample) => sample.powerW),
      load:
        recorded.series.host.length > 0
          ? [{ name: 'load (1 min)', points: recorded.series.host.map((sample): [number, number] => [seconds(sample.at), sample.load1]) }]
          : [],
      serverGauges: recorded.serverMetrics.series
        .filter((series) => !COUNTER.test(series.name))
        .map((series) => ({ name: series.name, points: series.points.map(([ms, value]): [number, number] => [Math.round(ms / 100) / 10, value]) })),
    };
    if (recorded.serverMetrics.unavailable !== undefined) view.serverMetricsNote = `server metrics: ${recorded.serverMetrics.unavailable}`;
    views.push(view);
  }
  return views;
}

/** Collapsed per trial: a run has many trials and the charts matter mostly when something looks off. */
export function machineStateHtml(trials: readonly MachineTrial[], size: ChartSize = { width: 560, height: 260 }): string {
  if (trials.length === 0) return '<p class="empty">No machine telemetry recorded.</p>';
  return trials
    .map((trial) => {
      const charts = [
        trial.smClock.length > 0 && timelineChart('GPU SM clock', 'MHz', trial.smClock, size),
        trial.power.length > 0 && timelineChart('GPU power', 'W', trial.power, size),
        trial.load.length > 0 && timelineChart('Host load', 'load', trial.load, size),
        trial.serverGauges.length > 0 && timelineChart('Server metrics (/metrics gauges)', 'value', trial.serverGauges, size),
      ].filter((svg): svg is string => typeof svg === 'string');
      const lines = [...trial.lines, ...(trial.serverMetricsNote ? [trial.serverMetricsNote] : [])];
      return (
        `<details data-trial="${trial.trialId}"><summary>${esc(trial.label)}</summary><ul>${lines.map((line) => `<li>${esc(line)}</li>`).join('')}</ul>` +
        `<div class="figures">${charts.map((svg) => `<figure>${svg}</figure>`).join('')}</div></details>`
      );
    })
    .join('');
}
