import { max, median } from 'simple-statistics';
import type { GpuSample, GpuSummary, TelemetrySeries, TelemetrySummary, TrialTelemetry } from './types.js';

/** Reasons that are not a slowdown: an idle GPU lowers its clocks by design. */
const BENIGN_REASONS = new Set(['idle']);

/** Reduce a trial's samples to the few numbers preflight, `show` and drift attribution compare. Pure. */
export function summarizeTelemetry(series: TelemetrySeries): TelemetrySummary {
  const byGpu = new Map<number, GpuSample[]>();
  for (const sample of series.gpu) byGpu.set(sample.index, [...(byGpu.get(sample.index) ?? []), sample]);
  const gpus = [...byGpu.entries()].sort(([a], [b]) => a - b).map(([index, samples]) => summarizeGpu(index, samples));
  const loads = series.host.map((sample) => sample.load1);
  const summary: TelemetrySummary = { gpus, processes: series.processes, governors: series.governors };
  if (series.gpuUnavailable !== undefined) summary.gpuUnavailable = series.gpuUnavailable;
  if (loads.length > 0) {
    summary.load1Median = median(loads);
    summary.load1Max = max(loads);
  }
  if (series.cpus !== undefined) summary.cpus = series.cpus;
  return summary;
}

function summarizeGpu(index: number, samples: GpuSample[]): GpuSummary {
  const values = (pick: (sample: GpuSample) => number | undefined): number[] => samples.map(pick).filter((value): value is number => value !== undefined);
  const med = (pick: (sample: GpuSample) => number | undefined): number | undefined => {
    const list = values(pick);
    return list.length > 0 ? median(list) : undefined;
  };
  const highest = (pick: (sample: GpuSample) => number | undefined): number | undefined => {
    const list = values(pick);
    return list.length > 0 ? max(list) : undefined;
  };
  const withReasons = samples.filter((sample) => sample.reasons !== undefined);
  const reasonShare: Record<string, number> = {};
  for (const sample of withReasons) {
    for (const reason of sample.reasons!) if (!BENIGN_REASONS.has(reason)) reasonShare[reason] = (reasonShare[reason] ?? 0) + 1;
  }
  for (const reason of Object.keys(reasonShare)) reasonShare[reason] = reasonShare[reason]! / withReasons.length;
  const summary: GpuSummary = { index, samples: samples.length, reasonShare };
  const put = (key: keyof GpuSummary, value: number | undefined): void => {
    if (value !== undefined) (summary as unknown as Record<string, number>)[key] = value;
  };
  put(
    'smClockMedianMHz',
    med((s) => s.smClockMHz),
  );
  put(
    'maxSmClockMHz',
    highest((s) => s.maxSmClockMHz),
  );
  put(
    'memClockMedianMHz',
    med((s) => s.memClockMHz),
  );
  put(
    'powerMedianW',
    med((s) => s.powerW),
  );
  put(
    'powerLimitW',
    med((s) => s.powerLimitW),
  );
  put(
    'temperatureMaxC',
    highest((s) => s.temperatureC),
  );
  put(
    'utilizationMedianPct',
    med((s) => s.utilizationPct),
  );
  put(
    'memoryUsedMaxMiB',
    highest((s) => s.memoryUsedMiB),
  );
  put(
    'memoryTotalMiB',
    highest((s) => s.memoryTotalMiB),
  );
  return summary;
}

/** "GPU 0: SM 1515/1980 MHz, 690/700 W, 41 °C, util 100%, 31.0 GiB, SW power cap 100%": one line per GPU for `show`. */
export function formatTelemetrySummary(summary: TelemetrySummary): string[] {
  const lines: string[] = [];
  if (summary.gpuUnavailable !== undefined) lines.push(`GPU telemetry unavailable: ${summary.gpuUnavailable}`);
  for (const gpu of summary.gpus) {
    const parts: string[] = [];
    if (gpu.smClockMedianMHz !== undefined)
      parts.push(`SM ${Math.round(gpu.smClockMedianMHz)}${gpu.maxSmClockMHz !== undefined ? `/${gpu.maxSmClockMHz}` : ''} MHz`);
    if (gpu.powerMedianW !== undefined)
      parts.push(`${Math.round(gpu.powerMedianW)}${gpu.powerLimitW !== undefined ? `/${Math.round(gpu.powerLimitW)}` : ''} W`);
    if (gpu.temperatureMaxC !== undefined) parts.push(`max ${gpu.temperatureMaxC} °C`);
    if (gpu.utilizationMedianPct !== undefined) parts.push(`util ${Math.round(gpu.utilizationMedianPct)}%`);
    if (gpu.memoryUsedMaxMiB !== undefined) parts.push(`${formatGiB(gpu.memoryUsedMaxMiB)} used`);
    for (const [reason, share] of Object.entries(gpu.reasonShare)) parts.push(`${reason} ${Math.round(share * 100)}%`);
    lines.push(`GPU ${gpu.index}: ${parts.join(', ')} (${gpu.samples} samples)`);
  }
  if (summary.processes.length > 0) {
    lines.push(
      `GPU processes: ${summary.processes.map((p) => `${p.name} (pid ${p.pid}${p.usedMiB !== undefined ? `, ${formatGiB(p.usedMiB)}` : ''})`).join(', ')}`,
    );
  }
  const host: string[] = [];
  if (summary.load1Median !== undefined)
    host.push(
      `load ${summary.load1Median.toFixed(2)} median, ${summary.load1Max!.toFixed(2)} max${summary.cpus !== undefined ? ` on ${summary.cpus} CPUs` : ''}`,
    );
  if (summary.governors.length > 0) host.push(`governor ${summary.governors.join('/')}`);
  if (host.length > 0) lines.push(`host: ${host.join(', ')}`);
  return lines;
}

export function formatGiB(mib: number): string {
  return `${(mib / 1024).toFixed(1)} GiB`;
}

/**
 * The machine state of several trials (a variant's) in one line: each finding once, a figure as its range over the
 * trials and GPUs ("SM 1410–1980 MHz"), a finding not in every trial with its count ("SW power cap in 3 of 10
 * trials"). What `show` prints per variant; the per-trial lines (formatTelemetrySummary) are behind `show --machine`.
 */
export function formatTelemetryAcross(trials: ReadonlyArray<Pick<TrialTelemetry, 'summary' | 'serverMetrics'>>): string {
  const summaries = trials.map((trial) => trial.summary);
  const total = summaries.length;
  const inSome = (count: number): string => (count < total ? ` in ${count} of ${total} trials` : '');
  const parts: string[] = [];
  for (const [reason, count] of counted(summaries.flatMap((summary) => (summary.gpuUnavailable === undefined ? [] : [summary.gpuUnavailable]))))
    parts.push(`GPU telemetry unavailable: ${reason}${inSome(count)}`);
  const gpus = summaries.flatMap((summary) => summary.gpus);
  if (gpus.length > 0) {
    const figures = [
      spanOf(
        gpus.map((gpu) => gpu.smClockMedianMHz),
        (value) => `SM ${value} MHz`,
      ),
      spanOf(
        gpus.map((gpu) => gpu.powerMedianW),
        (value) => `${value} W`,
      ),
      highestOf(
        gpus.map((gpu) => gpu.temperatureMaxC),
        (value) => `max ${value} °C`,
      ),
      spanOf(
        gpus.map((gpu) => gpu.utilizationMedianPct),
        (value) => `util ${value}%`,
      ),
      highestOf(
        gpus.map((gpu) => gpu.memoryUsedMaxMiB),
        (value) => `${formatGiB(value)} used`,
      ),
    ].filter((figure) => figure !== undefined);
    const indexes = new Set(gpus.map((gpu) => gpu.index)).size;
    parts.push(`${indexes === 1 ? 'GPU' : `${indexes} GPUs`}: ${figures.join(', ') || 'no readings'}`);
    const reasons = new Map<string, number>();
    for (const summary of summaries) {
      const active = new Set(summary.gpus.flatMap((gpu) => Object.entries(gpu.reasonShare).flatMap(([reason, share]) => (share > 0 ? [reason] : []))));
      for (const reason of active) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    }
    for (const [reason, count] of reasons) parts.push(`${reason}${inSome(count) || ' in every trial'}`);
  }
  const processes = counted(summaries.flatMap((summary) => [...new Set(summary.processes.map((process) => process.name))]));
  if (processes.size > 0) parts.push(`GPU processes: ${[...processes].map(([name, count]) => `${name}${inSome(count)}`).join(', ')}`);
  const load = spanOf(
    summaries.map((summary) => summary.load1Median),
    (value) => `load ${value} median`,
    2,
  );
  if (load !== undefined) {
    const cpus = [...new Set(summaries.flatMap((summary) => (summary.cpus === undefined ? [] : [summary.cpus])))];
    const highest = highestOf(
      summaries.map((summary) => summary.load1Max),
      (value) => `, ${value.toFixed(2)} max`,
    );
    parts.push(`host: ${load}${highest ?? ''}${cpus.length === 1 ? ` on ${cpus[0]} CPUs` : ''}`);
  }
  const governors = [...new Set(summaries.flatMap((summary) => summary.governors))];
  if (governors.length > 0) parts.push(`governor ${governors.join('/')}`);
  for (const [reason, count] of counted(trials.flatMap((trial) => (trial.serverMetrics.unavailable === undefined ? [] : [trial.serverMetrics.unavailable]))))
    parts.push(`server metrics: ${reason}${inSome(count)}`);
  const scraped = spanOf(
    trials.map((trial) => (trial.serverMetrics.unavailable === undefined ? trial.serverMetrics.series.length : undefined)),
    (value) => `${value} server metrics scraped`,
  );
  if (scraped !== undefined) parts.push(scraped);
  return parts.join('; ');
}

/** Each distinct value with how many times it occurs, in first-seen order. */
function counted(values: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const value of values) counts.set(value, (counts.get(value) ?? 0) + 1);
  return counts;
}

const present = (values: ReadonlyArray<number | undefined>): number[] =>
  values.filter((value): value is number => value !== undefined && Number.isFinite(value));

/** "lo–hi" of the figures present with `digits` decimals as the per-trial lines write them, one value when they agree; undefined when none is. */
function spanOf(values: ReadonlyArray<number | undefined>, text: (value: string) => string, digits = 0): string | undefined {
  const known = present(values);
  if (known.length === 0) return undefined;
  const [low, high] = [Math.min(...known).toFixed(digits), Math.max(...known).toFixed(digits)];
  return text(low === high ? high : `${low}–${high}`);
}

/** The highest of the figures present; undefined when none is. */
function highestOf(values: ReadonlyArray<number | undefined>, text: (value: number) => string): string | undefined {
  const known = present(values);
  return known.length === 0 ? undefined : text(Math.max(...known));
}
