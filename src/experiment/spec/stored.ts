import type { RunDetail } from '../../store/queries.js';
import type { ClientConfig, ResolvedExperiment, VariantVerdict } from './types.js';

/**
 * A stored run's experiment and verdicts in this module's types: the one place they are narrowed. The store's
 * decoder (store/run-json.ts) has checked the fields every reader uses; the rest is as a servelab wrote it.
 */
export function storedExperimentOf(run: RunDetail): ResolvedExperiment {
  const experiment = run.config as unknown as ResolvedExperiment;
  return { ...experiment, variants: experiment.variants.map((variant) => ({ ...variant, client: withWarmup(variant.client) })) };
}

/** Runs stored before `client.warmup` kept `warmupRequests`, sent before every trial: that is what they ran. */
function withWarmup(client: ClientConfig & { warmupRequests?: number }): ClientConfig {
  if (client.warmup !== undefined || client.warmupRequests === undefined) return client;
  const { warmupRequests, ...rest } = client;
  return { ...rest, warmup: { requests: warmupRequests, perWorkload: false } };
}

export function storedVerdictsOf(run: RunDetail): VariantVerdict[] | undefined {
  return run.verdicts as unknown as VariantVerdict[] | undefined;
}
