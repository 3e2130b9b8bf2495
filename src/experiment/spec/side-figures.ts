import { median } from 'simple-statistics';
import type { TrialRecord } from '../../store/types.js';
import { formatNumber, formatShare } from '../../util/format.js';

/** Per-trial figures shown beside the metric (show, report) when some trial has them: prefix-cache hits, energy, cost. */
export const SIDE_FIGURES = [
  { key: 'prefixCacheHitRate', title: 'prefix-cache hits', format: formatShare },
  { key: 'powerW', title: 'GPU W', format: formatNumber },
  { key: 'joulesPerToken', title: 'J/tok', format: formatNumber },
  { key: 'usdPerMillionTokens', title: '$/Mtok', format: formatNumber },
] as const satisfies ReadonlyArray<{ key: keyof TrialRecord['metrics']; title: string; format: (value: number) => string }>;

export type SideFigures = Partial<Record<(typeof SIDE_FIGURES)[number]['key'], number>>;

/** Medians over the trials of each side figure that some of them have. */
export function sideFigures(trials: readonly TrialRecord[]): SideFigures {
  const side: SideFigures = {};
  for (const { key } of SIDE_FIGURES) {
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
  return SIDE_FIGURES.filter(({ key }) => rows.some((row) => row.side[key] !== undefined)).map(({ key, title, format }) => ({
    title,
    cell: (row) => (row.side[key] === undefined ? '—' : format(row.side[key])),
  }));
}
