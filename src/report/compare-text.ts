/** `servelab diff` in the terminal: the same RunComparison the UI and report render as HTML. */

import { metricUnit } from '../experiment/spec/metrics.js';
import { table } from '../experiment/text/format.js';
import { formatChanges } from '../fingerprint/diff.js';
import { formatNumber, formatPercent } from '../util/format.js';
import type { RunComparison } from './compare.js';

export function comparisonText(comparison: RunComparison): string {
  const { runA, runB } = comparison;
  const lines = [`run ${runA} → run ${runB}`, '', 'environment:'];
  if (comparison.environmentVariant === undefined) lines.push('  (no variant in common)');
  else lines.push(`  ${comparison.environmentVariant}: ${comparison.changes.length === 0 ? 'identical' : formatChanges(comparison.changes)}`);
  lines.push(
    '',
    `${comparison.metric} (${metricUnit(comparison.metric)}): run ${runB}'s first trial (with its second when the first is beyond the band) against run ${runA}'s median, by the runner's drift rule`,
  );
  lines.push(
    comparison.rows.length === 0
      ? '  (no variant and workload in common)'
      : table(
          ['variant', 'workload', `run ${runA}`, `run ${runB}`, 'change', 'noise band', 'status'],
          comparison.rows.map((row) => [
            row.variant,
            row.workload,
            formatNumber(row.check.reference),
            formatNumber(row.check.current),
            formatPercent(row.check.changePct),
            `±${row.check.band.toFixed(1)}%`,
            row.status,
          ]),
        ),
  );
  // The rule states why whenever its answer is not a plain "within noise".
  const reasons = comparison.rows.flatMap((row) => (row.status === 'within noise' ? [] : [`  ${row.variant} ${row.workload}: ${row.decision.reason}`]));
  if (reasons.length > 0) lines.push('', 'why:', ...reasons);
  const alarms = comparison.rows.flatMap((row) => (row.alarm === undefined ? [] : [`  ${row.workload}: ${row.alarm}`]));
  if (alarms.length > 0) lines.push('', 'drift alarms:', ...alarms);
  return lines.join('\n');
}
