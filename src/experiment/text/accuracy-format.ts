/** quality.accuracy as text: `show`, the verdict table's accuracy column, the Markdown report. */
import { formatPoints, formatPValue, formatShareDecimal } from '../../util/format.js';
import type { AccuracyReport, Proportion, VariantAccuracy } from '../analysis/accuracy.js';

/** "0.81 [0.72, 0.88] (47/58)" */
function proportionText(proportion: Proportion): string {
  return `${formatShareDecimal(proportion.accuracy)} [${formatShareDecimal(proportion.low)}, ${formatShareDecimal(proportion.high)}] (${proportion.correct}/${proportion.items})`;
}

/** "−3.1 pts vs baseline, McNemar p 0.040" */
function versusText(entry: VariantAccuracy, baseline: string): string {
  return entry.mcnemar ? `${formatPoints(entry.delta)} vs ${baseline}, McNemar p ${formatPValue(entry.mcnemar.pValue)}` : `not compared with ${baseline}`;
}

/** A variant's accuracy for a table cell: "0.81 (−3.1 pts, p 0.040)", "1.00 (baseline)" or "not measured". */
export function accuracyCell(report: AccuracyReport | undefined, variant: string): string | undefined {
  if (!report) return undefined;
  const entry = report.variants.find((candidate) => candidate.variant === variant);
  if (!entry?.overall) return 'not measured';
  const share = formatShareDecimal(entry.overall.accuracy);
  if (variant === report.baseline) return `${share} (baseline)`;
  return entry.mcnemar ? `${share} (${formatPoints(entry.delta)}, p ${formatPValue(entry.mcnemar.pValue)})` : share;
}

export function formatAccuracy(report: AccuracyReport): string {
  const lines = [`accuracy on ${report.file} (${report.scorer} scorer; greedy answers, untimed; Wilson 95% intervals):`];
  for (const entry of report.variants) {
    if (!entry.overall) {
      lines.push(`  ${entry.variant}: not measured`);
      continue;
    }
    const versus = entry.variant === report.baseline ? 'baseline' : versusText(entry, report.baseline);
    lines.push(`  ${entry.variant}: accuracy ${proportionText(entry.overall)}, ${versus}`);
    if (entry.categories.length > 1) {
      lines.push(
        `    ${entry.categories.map((category) => `${category.category} ${formatShareDecimal(category.accuracy)} (${category.correct}/${category.items})`).join(', ')}`,
      );
    }
  }
  return lines.join('\n');
}
