import { markerSections } from '../util/marker-sections.js';

/** Host facts that slow a benchmark without touching the GPU: a busy CPU, a power-saving frequency governor. */

/** The three load averages of /proc/loadavg; undefined for anything else. */
export function parseLoadavg(text: string): { load1: number; load5: number; load15: number } | undefined {
  const [load1, load5, load15] = text.trim().split(/\s+/).map(Number);
  if (![load1, load5, load15].every((value) => value !== undefined && Number.isFinite(value))) return undefined;
  return { load1: load1!, load5: load5!, load15: load15! };
}

/**
 * Distinct governors from the concatenated scaling_governor files (one word per CPU). A container or VM without
 * cpufreq prints only `cat: …: No such file` on stderr, so the list is empty.
 */
export function parseGovernors(text: string): string[] {
  return [
    ...new Set(
      text
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => /^[a-z_]+$/.test(line)),
    ),
  ].sort();
}

/**
 * One shell line for all three, so a remote host costs one round trip per sample and this machine one process start
 * (each start forks the runner, 7-9 ms on a loaded 2-core box): loadavg, the CPUs this process may use, the governors,
 * separated by markers.
 */
export const HOST_PROBE = 'cat /proc/loadavg; echo --; nproc; echo --; cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor 2>/dev/null; true';

export function parseHostProbe(text: string): { load1?: number; cpus?: number; governors: string[] } {
  const [loadText = '', cpuText = '', governorText = ''] = markerSections(text);
  const load = parseLoadavg(loadText);
  const cpus = Number.parseInt(cpuText.trim(), 10);
  return { ...(load && { load1: load.load1 }), ...(Number.isInteger(cpus) && cpus > 0 && { cpus }), governors: parseGovernors(governorText) };
}
