import type { CommandRunner } from '../fingerprint/types.js';
import { HOST_PROBE, parseHostProbe } from './host.js';
import { gpuSampleOf, parseComputeApps, parseQueryCsv, queryComputeAppsArgv, queryGpuArgv, SAMPLE_FIELDS } from './nvidia-smi.js';
import { type GpuStream, streamGpuSamples } from './stream.js';
import type { GpuProcess, TelemetrySeries } from './types.js';

export interface SamplerOptions {
  /** Time between GPU/host readings. */
  intervalMs: number;
  /** The process list changes rarely and costs more to read: every this many readings. */
  processEvery?: number;
  /** Per command; a hung nvidia-smi (a GPU falling off the bus) must not hang the trial. */
  commandTimeoutMs?: number;
  /**
   * The runner runs commands on this machine: read the GPUs from one long-lived `nvidia-smi -lms` child instead of
   * one nvidia-smi per reading (over SSH every reading is a round trip anyway).
   */
  local?: boolean;
}

export interface Sampler {
  /** Stop sampling and return what was recorded; waits for a reading in flight. */
  stop(): Promise<TelemetrySeries>;
}

/**
 * Record GPU state (nvidia-smi), host load and CPU governors until stopped. On this machine the GPUs are read by
 * one `nvidia-smi -lms` child; on another host each reading is one short nvidia-smi run through the runner. Without nvidia-smi (a CPU-only host, a simulator run) the GPU part stays empty
 * with the reason, and host sampling goes on: telemetry never fails a trial.
 */
export function startSampler(runner: CommandRunner, options: SamplerOptions): Sampler {
  const series: TelemetrySeries = { gpu: [], processes: [], host: [], governors: [] };
  const timeoutMs = options.commandTimeoutMs ?? 5_000;
  const processEvery = options.processEvery ?? 5;
  const processes = new Map<string, GpuProcess>();
  let stopped = false;
  let readings = 0;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  const stream: GpuStream | undefined = options.local ? streamGpuSamples(options.intervalMs, (sample) => series.gpu.push(sample)) : undefined;

  const readGpu = async (): Promise<void> => {
    if (series.gpuUnavailable !== undefined) return;
    const result = await runner.run(queryGpuArgv(SAMPLE_FIELDS), timeoutMs);
    const at = Date.now();
    if (result.code !== 0) {
      series.gpuUnavailable = unavailableReason(result.code, result.stderr || result.stdout);
      return;
    }
    for (const row of parseQueryCsv(result.stdout, SAMPLE_FIELDS)) {
      const sample = gpuSampleOf(row, at);
      if (sample) series.gpu.push(sample);
    }
  };
  const readProcesses = async (): Promise<void> => {
    if (series.gpuUnavailable !== undefined) return;
    const result = await runner.run(queryComputeAppsArgv(), timeoutMs);
    if (result.code !== 0) return;
    for (const process of parseComputeApps(result.stdout)) {
      const key = `${process.pid}@${process.gpuUuid}`;
      const seen = processes.get(key);
      if (!seen || (process.usedMiB ?? 0) > (seen.usedMiB ?? 0)) processes.set(key, process);
    }
  };
  const readHost = async (): Promise<void> => {
    const result = await runner.run(['sh', '-c', HOST_PROBE], timeoutMs);
    const at = Date.now();
    const host = parseHostProbe(result.stdout);
    if (host.load1 !== undefined) series.host.push({ at, load1: host.load1 });
    series.cpus ??= host.cpus;
    series.governors = [...new Set([...series.governors, ...host.governors])].sort();
  };
  const reading = async (): Promise<void> => {
    const jobs = [stream ? Promise.resolve() : readGpu(), readHost()];
    if (readings % processEvery === 0) jobs.push(readProcesses());
    readings += 1;
    await Promise.all(jobs.map((job) => job.catch(() => undefined)));
  };
  // Readings never overlap: the next is scheduled when the previous has answered.
  const tick = (): void => {
    inFlight = reading().then(() => {
      if (!stopped) timer = setTimeout(tick, options.intervalMs);
    });
  };
  tick();

  return {
    async stop(): Promise<TelemetrySeries> {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inFlight;
      const streamFailure = await stream?.stop();
      if (streamFailure !== undefined && series.gpu.length === 0) series.gpuUnavailable = streamFailure;
      // One last process reading: a process that appeared since the last one is not missed.
      await readProcesses().catch(() => undefined);
      series.processes = [...processes.values()];
      return series;
    },
  };
}

/** "nvidia-smi not found" for a missing program; else the tool's own first line (driver not loaded…). */
function unavailableReason(code: number | null, output: string): string {
  if (code === null && /ENOENT|not found/i.test(output)) return 'nvidia-smi not found';
  if (code === 127) return 'nvidia-smi not found';
  const first = output
    .split('\n')
    .find((line) => line.trim() !== '')
    ?.trim();
  return `nvidia-smi failed${code !== null ? ` (exit ${code})` : ''}${first ? `: ${first}` : ''}`;
}
