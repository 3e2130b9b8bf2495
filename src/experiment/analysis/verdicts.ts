import { median } from 'simple-statistics';
import type { TrialHealth } from '../../store/queries.js';
import type { TrialRecord } from '../../store/types.js';
import { higherIsBetter, metricValue } from '../spec/metrics.js';
import type { ResolvedExperiment, VariantVerdict } from '../spec/types.js';
import { comparisonStrata } from './lanes.js';
import type { BlockedValue } from './stats.js';
import { compareSamples } from './verdict.js';

/**
 * Every non-baseline variant vs the baseline, per workload, on the experiment's metric, with the failed requests and
 * invalid trials of both sides so no view shows a verdict without them. `blocked`: the plan's schedule is blocked,
 * so variants are compared within passes (compareBlocked). Trials on several lanes are compared within each lane
 * (and pass), so a faster lane cancels out instead of deciding the verdict.
 */
export function computeVerdicts(
  experiment: ResolvedExperiment,
  trials: readonly TrialRecord[],
  health: readonly TrialHealth[] = [],
  blocked = false,
): VariantVerdict[] {
  const healthOf = (variant: string, workload: string) => health.find((row) => row.variant === variant && row.workload === workload);
  const strata = comparisonStrata(trials, blocked);
  const valuesOf = (variant: string, workload: string): BlockedValue[] =>
    trials
      .filter((trial) => trial.variant === variant && trial.workload === workload)
      .map((trial) => ({ value: metricValue(trial.metrics, experiment.metric), block: strata.stratumOf(trial) }))
      .filter((entry) => Number.isFinite(entry.value));
  const medianOf = (values: BlockedValue[]): number | null => (values.length > 0 ? median(values.map((entry) => entry.value)) : null);
  const verdicts: VariantVerdict[] = [];
  for (const workload of experiment.workloads) {
    const baseline = valuesOf(experiment.baseline, workload.label);
    for (const variant of experiment.variants) {
      if (variant.name === experiment.baseline) continue;
      const candidate = valuesOf(variant.name, workload.label);
      const verdict = compareSamples(baseline, candidate, {
        ...experiment.verdict,
        seed: experiment.seed,
        higherIsBetter: higherIsBetter(experiment.metric),
        blocked: strata.blocked,
      });
      verdicts.push({
        ...verdict,
        variant: variant.name,
        workload: workload.label,
        metric: experiment.metric,
        baselineMedian: medianOf(baseline),
        candidateMedian: medianOf(candidate),
        failedRequests: {
          baseline: healthOf(experiment.baseline, workload.label)?.failedRequests ?? 0,
          candidate: healthOf(variant.name, workload.label)?.failedRequests ?? 0,
        },
        invalidTrials: {
          baseline: healthOf(experiment.baseline, workload.label)?.invalidTrials ?? 0,
          candidate: healthOf(variant.name, workload.label)?.invalidTrials ?? 0,
        },
      });
    }
  }
  return verdicts;
}
