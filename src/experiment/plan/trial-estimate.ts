import { nextCapacityLevel } from '../../load/capacity.js';
import { capacityLevelPlan, maxInFlight, planLevels } from '../../load/level.js';
import type { LengthDistribution, Workload } from '../../load/types.js';
import type { ClientConfig } from '../spec/types.js';

/**
 * What a server declares about its own speed, for a plan without history: the simulator's load time and decode
 * model (its flags). Read by a caller that may read the simulator (the CLI); engines declare nothing.
 */
export interface DeclaredCosts {
  startupMs: number;
  /** Expected end-to-end time of one request with `active` requests in the batch. */
  requestMs(inputTokens: number, outputTokens: number, active: number): number;
  /** Where the figures come from, as the plan shows it ("simulator's --load-ms and decode model"). */
  basis: string;
}

/**
 * Servelab's own work around each start of a declared server (spawning it, probing readiness, fingerprint,
 * preflight): ~1 s per start measured for examples/sim-spec-decode.yaml on a loaded 2-core machine.
 */
export const START_OVERHEAD_MS = 1000;

/** Servelab's own work around each trial (cache salt or reset, telemetry, journal write): measured ~0.1 s locally. */
export const TRIAL_OVERHEAD_MS = 100;

/**
 * Expected length of one trial of `workload` from declared request times: warm-up requests, then the measured
 * ones in rounds of the concurrency (an open-loop rate: its arrival span plus one request). Undefined for dataset
 * prompts, whose lengths are unknown until read.
 */
export function declaredTrialMs(costs: DeclaredCosts, workload: Workload, client: ClientConfig): number | undefined {
  if (client.prompts.kind !== 'synthetic') return undefined;
  const input = meanLength(client.prompts.inputTokens);
  const output = meanLength(client.prompts.outputTokens);
  const rounds = (requests: number, concurrency: number): number =>
    Math.ceil(requests / concurrency) * costs.requestMs(input, output, Math.min(requests, concurrency));
  // As load/run.ts sizes the warm-up: from the workload's heaviest level.
  const inFlight = maxInFlight(planLevels(workload)[0]!);
  // As load/run.ts runs warm-up: its requests at once, up to the level's concurrency.
  const warmup = client.warmupRequests > 0 ? rounds(client.warmupRequests, Math.min(client.warmupRequests, inFlight)) : 0;
  return TRIAL_OVERHEAD_MS + warmup + measuredMs(costs, workload, rounds, input, output);
}

function measuredMs(
  costs: DeclaredCosts,
  workload: Workload,
  rounds: (requests: number, concurrency: number) => number,
  input: number,
  output: number,
): number {
  switch (workload.kind) {
    case 'single-stream':
      return rounds(workload.requests, 1);
    case 'concurrency':
      return rounds(workload.requests, workload.concurrency);
    case 'sweep':
      return workload.concurrencies.reduce((sum, concurrency) => sum + rounds(workload.requestsPerLevel, concurrency), 0);
    case 'rate': {
      const single = costs.requestMs(input, output, 1);
      const active = Math.min(workload.maxInFlight, Math.max(1, (workload.requestsPerSecond * single) / 1000));
      const span = (workload.requests / workload.requestsPerSecond) * 1000;
      // A rate above what maxInFlight can serve is paced by the slots instead.
      return Math.max(span, rounds(workload.requests, workload.maxInFlight)) + costs.requestMs(input, output, active);
    }
    case 'capacity': {
      // Its steps are chosen as it runs: counted as `steps` levels at the first one, the range's geometric middle.
      const first = capacityLevelPlan(workload, nextCapacityLevel(workload, []) ?? workload.min);
      const step: Workload = first.rate
        ? { kind: 'rate', requests: first.requests, ...first.rate }
        : { kind: 'concurrency', concurrency: first.concurrency ?? 1, requests: first.requests };
      return workload.steps * measuredMs(costs, step, rounds, input, output);
    }
  }
}

export function meanLength(length: LengthDistribution): number {
  switch (length.kind) {
    case 'fixed':
      return length.value;
    case 'uniform':
      return (length.min + length.max) / 2;
    case 'normal':
      return Math.min(length.max ?? Number.POSITIVE_INFINITY, Math.max(length.min ?? 1, length.mean));
  }
}
