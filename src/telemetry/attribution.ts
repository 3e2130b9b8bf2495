import { median } from 'simple-statistics';
import { formatGiB } from './summary.js';
import type { GpuSummary, TelemetrySummary } from './types.js';

/** Differences smaller than these are noise between identical trials. */
const REASON_SHARE_STEP = 0.1;
const CLOCK_CHANGE = 0.05;
const MEMORY_STEP_MIB = 1024;
const TEMPERATURE_STEP_C = 10;

/**
 * Machine-state differences between the reference trials and the current one, most telling first, e.g.
 * "GPU 0 throttled (SW power cap) for 38% of the trial vs 0%", "GPU 0 SM clock median 1410 vs 1980 MHz",
 * "1 foreign process using 30.0 GiB". Pure; empty when nothing differs beyond noise or nothing was recorded.
 */
export function attributeMachineState(reference: readonly TelemetrySummary[], current: TelemetrySummary): string[] {
  if (reference.length === 0) return [];
  const lines: string[] = [];
  const referenceHadGpus = reference.some((summary) => summary.gpus.length > 0);
  if (current.gpus.length === 0 && referenceHadGpus)
    lines.push(`no GPU telemetry now (${current.gpuUnavailable ?? 'no samples'}), the reference trials had some`);
  for (const gpu of current.gpus) {
    const past = reference.flatMap((summary) => summary.gpus.filter((candidate) => candidate.index === gpu.index));
    if (past.length > 0) lines.push(...compareGpu(gpu, past));
  }
  lines.push(...compareProcesses(reference, current));
  lines.push(...compareHost(reference, current));
  return lines;
}

function compareGpu(gpu: GpuSummary, past: GpuSummary[]): string[] {
  const label = `GPU ${gpu.index}`;
  const lines: string[] = [];
  const reasons = new Set([...Object.keys(gpu.reasonShare), ...past.flatMap((summary) => Object.keys(summary.reasonShare))]);
  for (const reason of reasons) {
    const now = gpu.reasonShare[reason] ?? 0;
    const before = median(past.map((summary) => summary.reasonShare[reason] ?? 0));
    if (Math.abs(now - before) < REASON_SHARE_STEP) continue;
    lines.push(`${label} throttled (${reason}) for ${percent(now)} of the trial vs ${percent(before)}`);
  }
  const clock = medianOf(past, (summary) => summary.smClockMedianMHz);
  if (gpu.smClockMedianMHz !== undefined && clock !== undefined && Math.abs(gpu.smClockMedianMHz - clock) > CLOCK_CHANGE * clock) {
    lines.push(`${label} SM clock median ${Math.round(gpu.smClockMedianMHz)} vs ${Math.round(clock)} MHz`);
  }
  const limit = medianOf(past, (summary) => summary.powerLimitW);
  if (gpu.powerLimitW !== undefined && limit !== undefined && Math.abs(gpu.powerLimitW - limit) >= 1) {
    lines.push(`${label} power limit ${Math.round(gpu.powerLimitW)} vs ${Math.round(limit)} W`);
  }
  const memory = medianOf(past, (summary) => summary.memoryUsedMaxMiB);
  if (gpu.memoryUsedMaxMiB !== undefined && memory !== undefined && Math.abs(gpu.memoryUsedMaxMiB - memory) > MEMORY_STEP_MIB) {
    const more = gpu.memoryUsedMaxMiB > memory;
    const delta = `${more ? '+' : '−'}${formatGiB(Math.abs(gpu.memoryUsedMaxMiB - memory))}`;
    lines.push(`${label} memory in use ${formatGiB(gpu.memoryUsedMaxMiB)} vs ${formatGiB(memory)} (${delta}${more ? ': another process?' : ''})`);
  }
  const temperature = medianOf(past, (summary) => summary.temperatureMaxC);
  if (gpu.temperatureMaxC !== undefined && temperature !== undefined && gpu.temperatureMaxC - temperature >= TEMPERATURE_STEP_C) {
    lines.push(`${label} max temperature ${gpu.temperatureMaxC} vs ${Math.round(temperature)} °C`);
  }
  return lines;
}

/** Processes whose name the reference trials never saw (pids change between runs; names do not). */
function compareProcesses(reference: readonly TelemetrySummary[], current: TelemetrySummary): string[] {
  const usual = new Map<string, number>();
  for (const summary of reference) {
    const counts = new Map<string, number>();
    for (const process of summary.processes) counts.set(process.name, (counts.get(process.name) ?? 0) + 1);
    for (const [name, count] of counts) usual.set(name, Math.max(usual.get(name) ?? 0, count));
  }
  const seen = new Map<string, number>();
  const foreign = current.processes.filter((process) => {
    const count = (seen.get(process.name) ?? 0) + 1;
    seen.set(process.name, count);
    return count > (usual.get(process.name) ?? 0);
  });
  if (foreign.length === 0) return [];
  const memory = foreign.reduce((sum, process) => sum + (process.usedMiB ?? 0), 0);
  const names = foreign.map((process) => `${process.name} pid ${process.pid}`).join(', ');
  return [`${foreign.length} foreign process${foreign.length > 1 ? 'es' : ''} using ${formatGiB(memory)} (${names})`];
}

function compareHost(reference: readonly TelemetrySummary[], current: TelemetrySummary): string[] {
  const lines: string[] = [];
  const load = medianOf(reference, (summary) => summary.load1Median);
  if (current.load1Median !== undefined && load !== undefined) {
    const step = Math.max(1, 0.25 * (current.cpus ?? 4));
    if (Math.abs(current.load1Median - load) > step)
      lines.push(`host load ${current.load1Median.toFixed(1)} vs ${load.toFixed(1)}${current.cpus !== undefined ? ` (${current.cpus} CPUs)` : ''}`);
  }
  const before = [...new Set(reference.flatMap((summary) => summary.governors))].sort().join('/');
  const now = current.governors.join('/');
  if (before !== '' && now !== '' && before !== now) lines.push(`CPU governor ${now} vs ${before}`);
  return lines;
}

function medianOf<T>(items: readonly T[], pick: (item: T) => number | undefined): number | undefined {
  const values = items.map(pick).filter((value): value is number => value !== undefined);
  return values.length > 0 ? median(values) : undefined;
}

function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}
