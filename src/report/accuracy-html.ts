/** The HTML report's accuracy section (quality.accuracy): per variant its share and interval, the paired test vs the baseline, per category. */
import type { AccuracyReport } from '../experiment/analysis/accuracy.js';
import { formatPoints, formatPValue, formatShareDecimal } from '../util/format.js';
import { escapeHtml as esc } from './escape.js';

export function accuracyHtml(report: AccuracyReport): string {
  const categories = [...new Set(report.variants.flatMap((entry) => entry.categories.map((category) => category.category)))];
  const rows = report.variants
    .map((entry) => {
      const overall = entry.overall;
      const versus =
        entry.variant === report.baseline
          ? '<td>baseline</td><td class="num">—</td>'
          : `<td>${entry.mcnemar ? `<span class="pill ${entry.worse ? 'slower' : ''}">${esc(formatPoints(entry.delta))}</span>` : 'not compared'}</td><td class="num">${formatPValue(entry.mcnemar?.pValue)}</td>`;
      const cells = categories
        .map((name) => {
          const category = entry.categories.find((candidate) => candidate.category === name);
          return `<td class="num">${category ? `${formatShareDecimal(category.accuracy)} (${category.correct}/${category.items})` : '—'}</td>`;
        })
        .join('');
      return overall
        ? `<tr><td><code>${esc(entry.variant)}</code></td><td class="num">${formatShareDecimal(overall.accuracy)}</td><td class="num">[${formatShareDecimal(overall.low)}, ${formatShareDecimal(overall.high)}]</td><td class="num">${overall.correct}/${overall.items}</td>${versus}${cells}</tr>`
        : `<tr><td><code>${esc(entry.variant)}</code></td><td colspan="${5 + categories.length}">not measured</td></tr>`;
    })
    .join('');
  const head = categories.map((name) => `<th class="num">${esc(name)}</th>`).join('');
  return `<h2>Accuracy</h2><p>${esc(report.file)}, ${esc(report.scorer)} scorer: greedy answers, untimed, once per server start (a variant's worst start counts). Interval: Wilson 95%; p: exact McNemar test on the items only one of the two got right.</p><table class="data"><thead><tr><th>config</th><th class="num">accuracy</th><th class="num">95% interval</th><th class="num">right</th><th>vs ${esc(report.baseline)}</th><th class="num">McNemar p</th>${head}</tr></thead><tbody>${rows}</tbody></table>`;
}
