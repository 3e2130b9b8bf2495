import { median } from 'simple-statistics';
import type { CategoryMetrics, TrialRecord } from '../../store/types.js';
import { pairKey } from '../../util/trial-keys.js';

/** Medians over a (variant, workload)'s trials of one category's figures; undefined where no trial measured it. */
export interface CategoryRow {
  variant: string;
  workload: string;
  category: string;
  trials: number;
  completed: number;
  failed: number;
  outputTokensPerSecond?: number;
  ttftMedianMs?: number;
  tpotMedianMs?: number;
  acceptanceRate?: number;
  meanAcceptedLength?: number;
  verifyStepMs?: number;
}

function medianOf(values: Array<number | undefined>): number | undefined {
  const finite = values.filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
  return finite.length === 0 ? undefined : median(finite);
}

/** Per-category rows of a run's trials, in trial order of first appearance; empty when no trial has categories. */
export function categoryRows(trials: readonly TrialRecord[]): CategoryRow[] {
  const groups = new Map<string, { variant: string; workload: string; category: string; metrics: CategoryMetrics[] }>();
  for (const trial of trials) {
    for (const [category, metrics] of Object.entries(trial.metrics.byCategory ?? {})) {
      const key = JSON.stringify([pairKey(trial), category]);
      const group = groups.get(key) ?? { variant: trial.variant, workload: trial.workload, category, metrics: [] };
      group.metrics.push(metrics);
      groups.set(key, group);
    }
  }
  return [...groups.values()].map(({ variant, workload, category, metrics }) => {
    const row: CategoryRow = {
      variant,
      workload,
      category,
      trials: metrics.length,
      completed: metrics.reduce((sum, entry) => sum + entry.completed, 0),
      failed: metrics.reduce((sum, entry) => sum + entry.failed, 0),
    };
    const figures = {
      outputTokensPerSecond: medianOf(metrics.map((entry) => entry.outputTokensPerSecond)),
      ttftMedianMs: medianOf(metrics.map((entry) => (entry.completed > 0 ? entry.ttftMedianMs : undefined))),
      tpotMedianMs: medianOf(metrics.map((entry) => (entry.completed > 0 ? entry.tpotMedianMs : undefined))),
      acceptanceRate: medianOf(metrics.map((entry) => entry.acceptanceRate)),
      meanAcceptedLength: medianOf(metrics.map((entry) => entry.meanAcceptedLength)),
      verifyStepMs: medianOf(metrics.map((entry) => entry.verifyStepMs)),
    };
    for (const [key, value] of Object.entries(figures)) if (value !== undefined) (row as unknown as Record<string, number>)[key] = value;
    return row;
  });
}
