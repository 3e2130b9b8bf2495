/** quality.equivalence as text: `show`, the verdict table's status column, the Markdown report. */

import { formatAgreement, formatNumber } from '../../util/format.js';
import { brokenFloor, type EquivalenceReport, statusNote } from '../analysis/equivalence.js';

/** A variant's status for a table cell: "equivalent", "outputs changed", … or "not measured". */
export function equivalenceCell(report: EquivalenceReport | undefined, variant: string): string | undefined {
  if (!report) return undefined;
  if (variant === report.baseline) return 'baseline';
  return report.variants.find((entry) => entry.variant === variant)?.status ?? 'not measured';
}

export function formatEquivalence(report: EquivalenceReport): string {
  const { floor } = report;
  const lines = [
    `output equivalence vs ${report.baseline} (greedy answers, untimed):`,
    floor
      ? `  A/A floor (${report.baseline} vs itself: ${floor.comparisons.join(', ')}): identical ${formatAgreement(floor.identicalShare)}, token agreement ${formatAgreement(floor.tokenAgreement)}${floor.earliestDivergence !== undefined ? `, earliest divergence ${floor.earliestDivergence}` : ''}${brokenFloor(floor) ? ` (broken: ${statusNote('inconclusive', floor)})` : ''}`
      : `  A/A floor: not measured (${report.baseline} has no second pass); only identical answers count as equivalent`,
  ];
  for (const entry of report.variants) {
    const { match, status } = entry;
    if (!match || !status) {
      lines.push(`  ${entry.variant}: not measured`);
      continue;
    }
    const divergence = match.firstDivergence
      ? `, first divergence median ${formatNumber(match.firstDivergence.median)} / min ${match.firstDivergence.min}`
      : '';
    lines.push(
      `  ${entry.variant}: ${status} (${statusNote(status, floor)}): identical ${formatAgreement(match.identicalShare)} (${match.identical}/${match.prompts}), token agreement ${formatAgreement(match.tokenAgreement)} by ${match.unit}${divergence}${entry.worstAt ? `; worst pass ${entry.worstAt}` : ''}`,
    );
  }
  return lines.join('\n');
}
