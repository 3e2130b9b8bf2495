/** The HTML report's output-equivalence section: status per variant, the A/A floor, the earliest differing answers side by side. */
import { brokenFloor, type EquivalenceReport, statusNote } from '../experiment/analysis/equivalence.js';
import { formatAgreement, formatNumber } from '../util/format.js';
import { escapeHtml as esc } from './escape.js';

/**
 * Answers wrap anywhere: a generated answer can be one unbroken run of characters thousands wide, and a grid column
 * grows to its content's min-content width unless its minimum is 0 (the report and the UI page both include this).
 */
export const EQUIVALENCE_CSS = `
.answers { display:grid; grid-template-columns:minmax(0, 1fr) minmax(0, 1fr); gap:0.5rem; }
.answers pre { white-space:pre-wrap; overflow-wrap:anywhere; margin:0; padding:0.5rem; border:1px solid var(--border, #ccc); }
`;

export function equivalenceHtml(report: EquivalenceReport): string {
  const { floor } = report;
  const floorText = floor
    ? `A/A floor (<code>${esc(report.baseline)}</code> vs itself: ${esc(floor.comparisons.join(', '))}): identical ${formatAgreement(floor.identicalShare)}, token agreement ${formatAgreement(floor.tokenAgreement)}${brokenFloor(floor) ? `. <strong>Broken: ${esc(statusNote('inconclusive', floor))}.</strong>` : ''}`
    : `A/A floor not measured: only identical answers count as equivalent`;
  const rows = report.variants
    .map((entry) => {
      const match = entry.match;
      const pill = entry.status === 'equivalent' ? 'faster' : entry.status === 'outputs changed' ? 'slower' : '';
      return `<tr><td><code>${esc(entry.variant)}</code></td><td>${entry.status ? `<span class="pill ${pill}" title="${esc(statusNote(entry.status, floor))}">${esc(entry.status)}</span>` : 'not measured'}</td><td class="num">${formatAgreement(match?.identicalShare)}</td><td class="num">${formatAgreement(match?.tokenAgreement)}</td><td class="num">${formatNumber(match?.firstDivergence?.median)}</td><td class="num">${match?.firstDivergence?.min ?? '—'}</td><td>${esc(entry.worstAt ?? '—')}</td></tr>`;
    })
    .join('');
  const sides = report.variants
    .filter((entry) => entry.match?.earliest && entry.status !== 'equivalent')
    .map((entry) => {
      const earliest = entry.match!.earliest!;
      return `<h3>${esc(entry.variant)}: prompt ${earliest.prompt}, first difference at ${earliest.position} ${esc(entry.match!.unit)}</h3><div class="answers"><pre><b>${esc(report.baseline)}</b>\n${esc(earliest.a)}</pre><pre><b>${esc(entry.variant)}</b>\n${esc(earliest.b)}</pre></div>`;
    })
    .join('');
  return `<h2>Output equivalence</h2><p>${floorText}</p><table class="data"><thead><tr><th>config</th><th>status</th><th class="num">identical</th><th class="num">token agreement</th><th class="num">first divergence median</th><th class="num">min</th><th>worst pass</th></tr></thead><tbody>${rows}</tbody></table>${sides}`;
}
