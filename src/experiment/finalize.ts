import { median } from 'simple-statistics';
import type { Db } from '../store/db.js';
import { listTrials, type TrialHealth, trialHealth } from '../store/queries.js';
import { setRunStatus, setRunVerdicts } from '../store/runs.js';
import type { RunStatus, TrialRecord } from '../store/types.js';
import { skippedTrialFilter } from './campaign.js';
import { higherIsBetter, metricValue } from './metrics.js';
import { loadRun, trialKey } from './run-store.js';
import type { BlockedValue } from './stats.js';
import type { ResolvedExperiment, VariantVerdict } from './types.js';
import { compareSamples } from './verdict.js';

export interface RunOutcome {
  runId: number;
  status: RunStatus;
  message?: string;
  verdicts?: VariantVerdict[];
}

/**
 * Every non-baseline variant vs the baseline, per workload, on the experiment's metric, with the failed requests and
 * invalid trials of both sides so no view shows a verdict without them. `blocked`: the plan's schedule is blocked,
 * so variants are compared within passes (compareBlocked).
 */
export function computeVerdicts(
  experiment: ResolvedExperiment,
  trials: readonly TrialRecord[],
  health: readonly TrialHealth[] = [],
  blocked = false,
): VariantVerdict[] {
  const healthOf = (variant: string, workload: string) => health.find((row) => row.variant === variant && row.workload === workload);
  const valuesOf = (variant: string, workload: string): BlockedValue[] =>
    trials
      .filter((trial) => trial.variant === variant && trial.workload === workload)
      .map((trial) => ({ value: metricValue(trial.metrics, experiment.metric), block: trial.block }))
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
        blocked,
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

/**
 * Close a run once every planned trial is stored: verdicts into runs.verdict_json, status 'done'. A run with
 * trials still missing keeps its status (a Slurm job still running, or a crash to resume).
 */
export function finalizeRun(db: Db, runId: number): RunOutcome {
  const { run, experiment, plan } = loadRun(db, runId);
  const trials = listTrials(db, runId);
  const stored = new Set(trials.map(trialKey));
  // A campaign's eliminated configs and early stop leave planned trials unmeasured on purpose.
  const skipped = skippedTrialFilter(db, runId);
  const missing = plan.trials.filter((trial) => !stored.has(trialKey(trial)) && !skipped(trial)).length;
  if (missing > 0) {
    return { runId, status: run.status, message: `${missing} of ${plan.trials.length} planned trials not measured yet` };
  }
  const verdicts = computeVerdicts(experiment, trials, trialHealth(db, runId), plan.schedule === 'blocked');
  db.transaction(() => {
    setRunVerdicts(db, runId, verdicts);
    setRunStatus(db, runId, 'done');
  })();
  return { runId, status: 'done', verdicts };
}
