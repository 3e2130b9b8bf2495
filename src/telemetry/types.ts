/** One nvidia-smi reading of one GPU. Fields nvidia-smi could not read are absent. */
export interface GpuSample {
  /** ms since the epoch, from nvidia-smi's own timestamp (host clock of the GPU machine). */
  at: number;
  index: number;
  smClockMHz?: number;
  memClockMHz?: number;
  maxSmClockMHz?: number;
  powerW?: number;
  powerLimitW?: number;
  temperatureC?: number;
  utilizationPct?: number;
  memoryUsedMiB?: number;
  memoryTotalMiB?: number;
  /** Active clock-event (throttle) reasons, by name, e.g. ["SW power cap"]; "idle" included when idle. */
  reasons?: string[];
}

/** A process holding GPU memory, as `--query-compute-apps` lists it. */
export interface GpuProcess {
  pid: number;
  name: string;
  usedMiB?: number;
  gpuUuid: string;
}

export interface HostSample {
  at: number;
  /** 1-minute load average. */
  load1: number;
}

/** Everything one trial's sampler recorded. */
export interface TelemetrySeries {
  /** Why there are no GPU samples, e.g. "nvidia-smi not found"; absent when sampling worked. */
  gpuUnavailable?: string;
  gpu: GpuSample[];
  /** Distinct processes seen on the GPUs during the trial, with the most memory each held. */
  processes: GpuProcess[];
  host: HostSample[];
  /** Distinct CPU frequency governors (e.g. ["performance"]); empty when the host exposes none. */
  governors: string[];
  cpus?: number;
}

export interface GpuSummary {
  index: number;
  samples: number;
  smClockMedianMHz?: number;
  maxSmClockMHz?: number;
  memClockMedianMHz?: number;
  powerMedianW?: number;
  powerLimitW?: number;
  temperatureMaxC?: number;
  utilizationMedianPct?: number;
  memoryUsedMaxMiB?: number;
  memoryTotalMiB?: number;
  /** Share (0–1) of samples with each non-idle clock-event reason active. */
  reasonShare: Record<string, number>;
}

/** The machine state of one trial in a few numbers: what `show`, preflight and drift attribution compare. */
export interface TelemetrySummary {
  gpuUnavailable?: string;
  gpus: GpuSummary[];
  processes: GpuProcess[];
  load1Median?: number;
  load1Max?: number;
  cpus?: number;
  governors: string[];
}

/** A Prometheus metric's values over a trial: [ms since trial start, value]. Counters are stored as read. */
export interface ServerMetricSeries {
  name: string;
  points: Array<[number, number]>;
}

export interface ServerMetrics {
  /** Why nothing was scraped (no /metrics endpoint, not Prometheus text). */
  unavailable?: string;
  series: ServerMetricSeries[];
}

/** What a trial stores about its machine. */
export interface TrialTelemetry {
  startedAt: number;
  summary: TelemetrySummary;
  series: TelemetrySeries;
  serverMetrics: ServerMetrics;
}
