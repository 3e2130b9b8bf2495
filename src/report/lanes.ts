import type { LaneReport } from '../experiment/analysis/lanes.js';
import { formatLaneReport, laneFindingLine, laneShareLine } from '../experiment/text/lane-format.js';
import { escapeHtml as esc, markdownCodeBlock } from './escape.js';

/**
 * The report's and the UI's lane section of a run on lanes (the conclusion's lane report): which lane measured what,
 * and each lane whose level differs from the others' with its fingerprint difference. Empty without lanes. Its
 * lines are the text `run` and `show` print (experiment/text/lane-format.ts).
 */
export function laneReportParts(report: LaneReport | undefined): { html: string; markdown: string } {
  if (!report) return { html: '', markdown: '' };
  const findings =
    report.findings.length > 0
      ? `<ul class="notes">${report.findings.map((finding) => `<li class="alarm">${esc(laneFindingLine(finding))}</li>`).join('')}</ul>`
      : report.lanes.length > 1
        ? '<p class="muted">No lane differs significantly from the others at the same configs.</p>'
        : '';
  const html = `\n<section class="lanes"><h2>Lanes</h2><p class="muted">Verdicts compare configs within each lane.</p><ul class="lane-shares">${report.lanes
    .map((share) => `<li>${esc(laneShareLine(share))}</li>`)
    .join('')}</ul>${findings}</section>`;
  return { html, markdown: `\n## Lanes\n\n${markdownCodeBlock(formatLaneReport(report).join('\n'))}` };
}
