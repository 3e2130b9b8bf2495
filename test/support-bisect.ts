import { simCommand, writeExperiment } from './support-experiment.js';

/** The EAGLE-3 example's NCCL tuning (examples/eagle3-sglang-campaign/nccl.env). */
export const SIX_NCCL = {
  NCCL_ALGO: 'Ring',
  NCCL_BUFFSIZE: '8388608',
  NCCL_MAX_NCHANNELS: '16',
  NCCL_NTHREADS: '512',
  NCCL_P2P_LEVEL: 'SYS',
  NCCL_PROTO: 'LL',
};

/**
 * A tuned and an untuned file of one experiment on the simulator, whose --env-speedup flags make some variables
 * matter. The metric is the median time per output token, which one slow moment of a busy host does not move; with
 * effects of 50–100% and 2% jitter, six trials per configuration (three in each of two passes) separate them even on a
 * box under a load of 20.
 */
export function bisectExperiments(dir: string, name: string, speedups: string[], env: Record<string, string>): { tuned: string; untuned: string } {
  const common = {
    name,
    metric: 'tpotMedianMs',
    trials: 2,
    // One start per configuration and pass, as on a box where a start is a 15-minute load; two passes per round.
    schedule: 'blocked',
    passes: 2,
    client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 32, seed: 3 }, warmupRequests: 1 },
    workloads: [{ kind: 'single-stream', requests: 2 }],
  };
  const command = simCommand({ tpotMs: 8, extra: speedups.flatMap((speedup) => ['--env-speedup', speedup]) });
  return {
    tuned: writeExperiment(dir, 'tuned.yaml', { ...common, server: { command, env, readyTimeout: '5m' } }),
    untuned: writeExperiment(dir, 'untuned.yaml', { ...common, server: { command, readyTimeout: '5m' } }),
  };
}
