import { median } from 'simple-statistics';
import { CATEGORY_METRICS, type CategoryFigures, metricDef, SPECULATIVE_HEADER, speculativeCell } from '../../metrics/catalog.js';
import type { CategoryMetrics, TrialRecord } from '../../store/types.js';
import { pairKey } from '../../util/trial-keys.js';

/** Medians over a (variant, workload)'s trials of one category's figures; undefined where no trial measured it. */
export interface CategoryRow extends Partial<CategoryFigures> {
  variant: string;
  workload: string;
  category: string;
  trials: number;
  completed: number;
  failed: number;
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
    for (const metric of CATEGORY_METRICS) {
      // A category with no completed request in a trial measured no latency there (older rows kept zeros for it).
      const latency = metricDef(metric).group === 'latency';
      const value = medianOf(metrics.map((entry) => (latency && entry.completed === 0 ? undefined : entry[metric])));
      if (value !== undefined) row[metric] = value;
    }
    return row;
  });
}

/** A column of the per-category table (show, Markdown and HTML report), its cell as plain text. */
export interface CategoryColumn {
  title: string;
  /** Right-aligned: a count or a figure. */
  numeric: boolean;
  cell: (row: CategoryRow) => string;
}

/** The per-category table's columns: the row's identity and counts, the catalogue's per-category figures, speculative ones in one cell. */
export const CATEGORY_COLUMNS: readonly CategoryColumn[] = [
  { title: 'variant', numeric: false, cell: (row) => row.variant },
  { title: 'workload', numeric: false, cell: (row) => row.workload },
  { title: 'category', numeric: false, cell: (row) => row.category },
  { title: 'trials', numeric: true, cell: (row) => String(row.trials) },
  { title: 'ok', numeric: true, cell: (row) => String(row.completed) },
  { title: 'failed', numeric: true, cell: (row) => String(row.failed) },
  ...CATEGORY_METRICS.filter((metric) => metricDef(metric).group !== 'speculative').map((metric) => {
    const { header, format } = metricDef(metric);
    return { title: header, numeric: true, cell: (row: CategoryRow) => (row[metric] === undefined ? '—' : format(row[metric])) };
  }),
  { title: SPECULATIVE_HEADER, numeric: true, cell: (row) => speculativeCell(row) },
];
