import type { RunDetail } from '../../store/queries.js';
import type { ResolvedExperiment, VariantVerdict } from './types.js';

/**
 * A stored run's experiment and verdicts in this module's types: the one place they are narrowed. The store's
 * decoder (store/run-json.ts) has checked the fields every reader uses; the rest is as a servelab wrote it.
 */
export function storedExperimentOf(run: RunDetail): ResolvedExperiment {
  return run.config as unknown as ResolvedExperiment;
}

export function storedVerdictsOf(run: RunDetail): VariantVerdict[] | undefined {
  return run.verdicts as unknown as VariantVerdict[] | undefined;
}
