/** Everything about a trial's environment that can change its numbers. Flattened with `flattenFingerprint` for diffs. */
export interface Fingerprint {
  servelabVersion: string;
  servelabGitSha?: string;
  /** "local" or the SSH host / Slurm node the server ran on. */
  executor: string;
  host: {
    hostname: string;
    os: string;
    kernel: string;
    cpuModel: string;
    cpus: number;
    memoryGiB: number;
  };
  gpus: Array<{
    index: number;
    name: string;
    driver: string;
    memoryMiB: number;
    smClockMHz?: number;
    maxSmClockMHz?: number;
    powerLimitW?: number;
    busId?: string;
    persistenceMode?: string;
    maxMemClockMHz?: number;
  }>;
  /**
   * Build and interconnect facts of the server's host, flat: cuda.driver, cuda.nvcc, cuda.torch, nccl.torch,
   * nccl.system, topology.GPU0-GPU1 (NV18, SYS…), topology.GPU0 CPU Affinity, nvlink.0 ("18 links × 26.562 GB/s").
   */
  system?: Record<string, string>;
  /** Preflight findings before the server started (key → message); absent or empty on a clean machine. */
  preflight?: Record<string, string>;
  /** The exact argv of the server. */
  command: string[];
  /** Server environment variables matching the capture patterns, secrets redacted. */
  env: Record<string, string>;
  /** Versions of server packages that could be discovered (vllm, sglang, torch, ...). */
  packages: Record<string, string>;
  model?: string;
}

export interface FingerprintChange {
  /** Flattened key, e.g. "env.NCCL_PROTO" or "gpus.0.driver". */
  key: string;
  before?: string;
  after?: string;
}

export interface CommandResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * All fingerprinting needs from where the server runs: its label and a way to run a short command there
 * (uname, nvidia-smi, pip show…). Every Executor is one; tests can pass a bare process runner.
 */
export interface CommandRunner {
  /** Human label for the host, e.g. "local" or "gpu-box-1". */
  readonly hostLabel: string;
  /** Run a short command on the host. Never throws on non-zero exit. */
  run(argv: string[], timeoutMs?: number): Promise<CommandResult>;
}
