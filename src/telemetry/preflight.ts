import type { CommandRunner } from '../fingerprint/types.js';
import { UserError } from '../util/errors.js';
import { HOST_PROBE, parseHostProbe } from './host.js';
import { gpuSampleOf, numberCell, PREFLIGHT_FIELDS, parseComputeApps, parseQueryCsv, type QueryRow, queryComputeAppsArgv, queryGpuArgv } from './nvidia-smi.js';
import { formatGiB } from './summary.js';
import type { GpuProcess } from './types.js';

export type PreflightMode = 'strict' | 'warn' | 'off';

export interface PreflightFinding {
  /** Stable key, e.g. "gpu0.foreignMemory": a fingerprint fact, so a drift diff names what changed. */
  key: string;
  message: string;
}

export interface PreflightReport {
  findings: PreflightFinding[];
  /** Why GPUs were not checked (no nvidia-smi); absent when they were. */
  gpuUnavailable?: string;
}

export interface PreflightThresholds {
  /** GPU memory in use before our server starts that counts as someone else's. */
  foreignMemoryMiB: number;
  /** 1-minute load average per CPU above which the host counts as busy. */
  loadPerCpu: number;
}

export const DEFAULT_THRESHOLDS: PreflightThresholds = { foreignMemoryMiB: 1024, loadPerCpu: 0.5 };

export interface PreflightInput {
  gpuRows: QueryRow[];
  processes: GpuProcess[];
  load1?: number;
  cpus?: number;
  governors: string[];
  /** GPU indexes the server will use (from CUDA_VISIBLE_DEVICES); all when absent. */
  gpus?: number[];
}

/**
 * What is wrong with the machine before a server starts, as findings. Pure. Memory in use counts even without a
 * listed process: in a container nvidia-smi hides other PID namespaces' processes but not their memory.
 */
export function evaluatePreflight(input: PreflightInput, thresholds: PreflightThresholds = DEFAULT_THRESHOLDS): PreflightFinding[] {
  const findings: PreflightFinding[] = [];
  for (const row of input.gpuRows) {
    const sample = gpuSampleOf(row, 0);
    if (!sample || (input.gpus !== undefined && !input.gpus.includes(sample.index))) continue;
    const gpu = `gpu${sample.index}`;
    const label = `GPU ${sample.index}`;
    const processes = input.processes.filter((process) => process.gpuUuid === row.uuid);
    if (processes.length > 0) {
      const list = processes.map((p) => `${p.name} pid ${p.pid}${p.usedMiB !== undefined ? ` ${formatGiB(p.usedMiB)}` : ''}`).join(', ');
      findings.push({
        key: `${gpu}.foreignProcesses`,
        message: `${label}: ${processes.length} process${processes.length > 1 ? 'es' : ''} already on it (${list})`,
      });
    }
    if (sample.memoryUsedMiB !== undefined && sample.memoryUsedMiB > thresholds.foreignMemoryMiB) {
      findings.push({ key: `${gpu}.foreignMemory`, message: `${label}: ${formatGiB(sample.memoryUsedMiB)} of memory in use before the server starts` });
    }
    const slowdowns = (sample.reasons ?? []).filter((reason) => reason !== 'idle');
    if (slowdowns.length > 0) findings.push({ key: `${gpu}.clockEvents`, message: `${label}: clock-event reasons active: ${slowdowns.join(', ')}` });
    const appClock = numberCell(row['clocks.applications.graphics']);
    if (appClock !== undefined && sample.maxSmClockMHz !== undefined && appClock < sample.maxSmClockMHz) {
      findings.push({ key: `${gpu}.applicationClocks`, message: `${label}: application clocks ${appClock} MHz below max ${sample.maxSmClockMHz} MHz` });
    }
    const defaultLimit = numberCell(row['power.default_limit']);
    if (defaultLimit !== undefined && sample.powerLimitW !== undefined && sample.powerLimitW < defaultLimit - 0.5) {
      findings.push({
        key: `${gpu}.powerLimit`,
        message: `${label}: power limit ${Math.round(sample.powerLimitW)} W below default ${Math.round(defaultLimit)} W`,
      });
    }
    if (row.persistence_mode === 'Disabled')
      findings.push({ key: `${gpu}.persistenceMode`, message: `${label}: persistence mode off (first CUDA call pays driver init)` });
  }
  if (input.load1 !== undefined && input.cpus !== undefined && input.load1 > thresholds.loadPerCpu * input.cpus) {
    findings.push({ key: 'host.load', message: `host busy: load average ${input.load1.toFixed(2)} on ${input.cpus} CPUs` });
  }
  const slowGovernors = input.governors.filter((governor) => governor !== 'performance');
  if (slowGovernors.length > 0) findings.push({ key: 'host.governor', message: `CPU frequency governor ${slowGovernors.join('/')} (not performance)` });
  return findings;
}

/** GPU indexes of a numeric CUDA_VISIBLE_DEVICES ("0,1"); undefined when unset or given as UUIDs. */
export function visibleGpus(env: Record<string, string>): number[] | undefined {
  const value = env.CUDA_VISIBLE_DEVICES;
  if (value === undefined || !/^\d+(,\d+)*$/.test(value.trim())) return undefined;
  return value.trim().split(',').map(Number);
}

/** Read the machine through the runner (the executor's host) and evaluate it. Never throws. */
export async function runPreflight(runner: CommandRunner, options: { gpus?: number[]; thresholds?: PreflightThresholds } = {}): Promise<PreflightReport> {
  const timeoutMs = 10_000;
  const safe = (argv: string[]) => runner.run(argv, timeoutMs).catch((error: Error) => ({ code: null, stdout: '', stderr: error.message }));
  const [gpuResult, appsResult, hostResult] = await Promise.all([
    safe(queryGpuArgv(PREFLIGHT_FIELDS)),
    safe(queryComputeAppsArgv()),
    safe(['sh', '-c', HOST_PROBE]),
  ]);
  const host = parseHostProbe(hostResult.stdout);
  const input: PreflightInput = {
    gpuRows: gpuResult.code === 0 ? parseQueryCsv(gpuResult.stdout, PREFLIGHT_FIELDS) : [],
    processes: appsResult.code === 0 ? parseComputeApps(appsResult.stdout) : [],
    governors: host.governors,
    ...(host.load1 !== undefined && { load1: host.load1 }),
    ...(host.cpus !== undefined && { cpus: host.cpus }),
    ...(options.gpus !== undefined && { gpus: options.gpus }),
  };
  const report: PreflightReport = { findings: evaluatePreflight(input, options.thresholds) };
  if (gpuResult.code !== 0)
    report.gpuUnavailable = gpuResult.code === null || gpuResult.code === 127 ? 'nvidia-smi not found' : `nvidia-smi failed (exit ${gpuResult.code})`;
  return report;
}

/** strict: a finding stops the run before the server starts; warn: each is logged; off: nothing is checked. */
export function enforcePreflight(report: PreflightReport, mode: PreflightMode, log: (line: string) => void): void {
  if (mode === 'off' || report.findings.length === 0) return;
  if (mode === 'strict') {
    throw new UserError(
      `preflight failed: ${report.findings.map((finding) => finding.message).join('; ')}`,
      'free or fix the machine, or set `preflight: warn` in the experiment file to measure anyway',
    );
  }
  for (const finding of report.findings) log(`preflight warning: ${finding.message}`);
}
