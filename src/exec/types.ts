import type { CommandRunner } from '../fingerprint/types.js';
import type { LaunchHooks, RunningServer, ServerSpec } from '../launch/types.js';
import type { BenchOptions, BenchResult } from '../load/types.js';

export type { CommandResult, CommandRunner } from '../fingerprint/types.js';

/**
 * Where servers run. The experiment runner talks only to this interface, so a variant runs the same way
 * on this machine or on an SSH host. (Slurm dispatches jobs that each run a lane on their node: see experiment/run/slurm.)
 * Its `hostLabel` and `run` (CommandRunner) are all that fingerprinting uses.
 */
export interface Executor extends CommandRunner {
  readonly kind: 'local' | 'ssh';
  /** Start a server on the host and wait until it is ready; its baseUrl is reachable from where the load client runs. */
  launch(spec: ServerSpec, hooks: LaunchHooks): Promise<RunningServer>;
  /** Run the load client where the experiment says (locally, or on the host so network latency is not measured). */
  bench(options: BenchOptions): Promise<BenchResult>;
  /** Stop everything this executor started and release connections. */
  close(): Promise<void>;
  /**
   * Executors whose jobs outlive their runner on a host (SSH): stop those a killed runner of the same part of the run
   * left there, once, and say which (their server pid where they had one), so the runner can mark their rows;
   * undefined when it cannot tell (no job tag: it does not know which part of which run it serves).
   */
  stopLeftovers?(): Promise<LeftoverJob[] | undefined>;
}

/** A job a killed runner left on a host, stopped and removed by the next one. */
export interface LeftoverJob {
  dir: string;
  pid?: number;
}

export type { ExecutorConfig } from './config.js';
