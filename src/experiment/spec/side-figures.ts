import { median } from 'simple-statistics';
import { type CatalogMetric, metricDef, metricsWhere } from '../../metrics/catalog.js';
import type { TrialRecord } from '../../store/types.js';

/** Per-trial figures shown beside the metric (show, report) when some trial has them: the catalogue's `side` ones. */
const SIDE_FIGURES = metricsWhere((def) => def.side);

export type SideFigures = Partial<Record<CatalogMetric, number>>;

/** Medians over the trials of each side figure that some of them have. */
export function sideFigures(trials: readonly TrialRecord[]): SideFigures {
  const side: SideFigures = {};
  for (const key of SIDE_FIGURES) {
    const values = trials.flatMap((trial) => {
      const value = trial.metrics[key];
      return typeof value === 'number' && Number.isFinite(value) ? [value] : [];
    });
    if (values.length > 0) side[key] = median(values);
  }
  return side;
}

/** The side figures some row has, as columns: title and each row's cell ("—" where a row lacks it). */
export function sideColumns(rows: ReadonlyArray<{ side: SideFigures }>): Array<{ title: string; cell: (row: { side: SideFigures }) => string }> {
  return SIDE_FIGURES.filter((key) => rows.some((row) => row.side[key] !== undefined)).map((key) => {
    const { header, format } = metricDef(key);
    return { title: header, cell: (row) => (row.side[key] === undefined ? '—' : format(row.side[key])) };
  });
}
