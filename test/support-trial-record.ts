import type { TrialMetrics, TrialRecord } from '../src/store/types.js';

/** Plausible figures of one valid trial, for analysis tests that vary a few of them. */
export const BASE_METRICS: TrialMetrics = {
  outputTokensPerSecond: 100,
  requestsPerSecond: 1,
  perStreamTokensPerSecond: 100,
  ttftMedianMs: 10,
  ttftP90Ms: 16,
  ttftP99Ms: 20,
  tpotMedianMs: 5,
  itlP99Ms: 9,
  e2eMedianMs: 200,
  completed: 40,
  failed: 0,
};

/** A stored trial of `variant` on `workload` with BASE_METRICS and `metrics` over them. */
export function trialRecord(variant: string, workload: string, metrics: Partial<TrialMetrics> = {}): TrialRecord {
  return {
    id: 1,
    runId: 1,
    variant,
    serverKey: 'k',
    workload,
    params: {},
    block: 0,
    repetition: 0,
    startedAt: '',
    finishedAt: '',
    metrics: { ...BASE_METRICS, ...metrics },
    fingerprintId: 1,
  };
}
