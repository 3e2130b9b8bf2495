/**
 * Run B against run A with the runner's drift rule: the comparison `diff`, the report and the UI show. Pure.
 */
import { type DriftCheck, type DriftDecision, driftStatus, formatDriftAlarm, judgeDrift } from '../experiment/analysis/drift.js';
import { metricUnit } from '../experiment/spec/metrics.js';
import type { MetricName } from '../experiment/spec/types.js';
import { diffFingerprints } from '../fingerprint/diff.js';
import type { FingerprintChange } from '../fingerprint/types.js';
import { experimentOf, orderedVariants, orderedWorkloads, type RunData, representativeFingerprint } from './model.js';
import { metricValues } from './series.js';

export interface DriftRow {
  variant: string;
  workload: string;
  /** The drift rule's judgement (judgeDrift), exactly as the runner judged or would judge run B against run A. */
  decision: DriftDecision;
  /** decision.check: the figure judged. */
  check: DriftCheck;
  /** Short status (driftStatus): DRIFT, not confirmed, history too short… */
  status: string;
  /** Run A's trials of the pair: the history (check.reference is their median). */
  historySize: number;
  /** Run B's trials of the pair (check.current is their mean). */
  currentSize: number;
  /** The runner's one-line alarm text, set only when the rule alarms. */
  alarm?: string;
}

/** Run B against run A: environment changes and whether each variant's numbers moved beyond noise. */
export interface RunComparison {
  runA: number;
  runB: number;
  metric: MetricName;
  /** Baseline variant of run B: its alarms are the ones the runner acts on. */
  baseline: string;
  /** The variant whose fingerprints `changes` compares (absent when the runs share none). */
  environmentVariant?: string;
  changes: FingerprintChange[];
  rows: DriftRow[];
  drifted: boolean;
}

/**
 * Compare two runs with the runner's drift rule (judgeDrift): per variant and workload both have, B's first trials
 * (in order) against A's trials as history, with B's drift settings and planned trials — the judgement `run`,
 * `diff`, the report and the UI all show — plus the environment diff of their fingerprints of one variant.
 */
export function compareRuns(a: RunData, b: RunData): RunComparison {
  const experiment = experimentOf(b.run) ?? experimentOf(a.run);
  const metric: MetricName = experiment?.metric ?? 'outputTokensPerSecond';
  const band = experiment?.drift ?? { relativeBand: 0.05, sigmas: 3 };
  // Compare like with like: the same variant's environment in both runs (the baseline when both measured it).
  const shared = new Set(a.trials.map((trial) => trial.variant));
  const variant = [experiment?.baseline, ...b.trials.map((trial) => trial.variant)].find(
    (name) => name !== undefined && shared.has(name) && b.trials.some((trial) => trial.variant === name),
  );
  const fingerprintA = representativeFingerprint(a, variant);
  const fingerprintB = representativeFingerprint(b, variant);
  const changes = fingerprintA && fingerprintB ? diffFingerprints(fingerprintA, fingerprintB) : [];
  const rows: DriftRow[] = [];
  for (const workload of orderedWorkloads(experiment, b.trials)) {
    for (const name of orderedVariants(experiment, b.trials)) {
      const history = metricValues(a.trials, name, workload, metric);
      const current = metricValues(b.trials, name, workload, metric);
      const planned = b.run.plan.trials.filter((trial) => trial.variant === name && trial.workload === workload).length;
      const decision = history.length > 0 ? judgeDrift(current, history, { ...band, confirmable: (planned || current.length) >= 2 }) : undefined;
      if (!decision) continue;
      const { check } = decision;
      rows.push({
        variant: name,
        workload,
        decision,
        check,
        status: driftStatus(decision, history.length),
        historySize: history.length,
        currentSize: current.length,
        ...(decision.kind === 'alarm' && {
          alarm: formatDriftAlarm({
            variant: name,
            metricLabel: metricUnit(metric),
            current: check.current,
            reference: check.reference,
            changePct: check.changePct,
            changes,
          }),
        }),
      });
    }
  }
  const baseline = experiment?.baseline ?? b.trials[0]?.variant ?? '';
  return {
    runA: a.run.id,
    runB: b.run.id,
    metric,
    baseline,
    ...(variant !== undefined && { environmentVariant: variant }),
    changes,
    rows,
    drifted: rows.some((row) => row.decision.kind === 'alarm'),
  };
}
