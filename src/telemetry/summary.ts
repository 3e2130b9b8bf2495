import { max, median } from 'simple-statistics';
import type { GpuSample, GpuSummary, TelemetrySeries, TelemetrySummary } from './types.js';

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
