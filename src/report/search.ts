import { leadersOf, type SearchHeatmap, type SearchSummary } from '../experiment/analysis/search-summary.js';
import { aliveText, budgetText, formatSearchSummary, leaderText, searchAnswerText, searchPointTable, shareText } from '../experiment/text/search-format.js';
import { formatNumber } from '../util/format.js';
import { HEAT_MARK_SYMBOL, heatmapChart } from './charts.js';
import { escapeHtml as esc, escapeMarkdownCell, markdownCodeBlock } from './escape.js';
import type { Figure } from './figures.js';
import { figuresHtml } from './html.js';

/**
 * A search run in the report and the UI: its summary (experiment/analysis/search-summary.ts, carried by the run's
 * conclusion, the model `show` and the run's final text render too) and its response surface, a heatmap over two
 * knobs per load level. The report's search section, HTML and Markdown; empty for a run that is no search.
 */
export function searchReportParts(summary: SearchSummary | undefined): { html: string; markdown: string } {
  if (!summary) return { html: '', markdown: '' };
  return { html: `\n${searchHtml(summary)}`, markdown: `\n${searchMarkdown(summary)}` };
}

export function searchHtml(summary: SearchSummary): string {
  const { across, levels } = leadersOf(summary);
  const resolved = summary.done?.resolved ?? false;
  const state = summary.done ? esc(summary.done.reason) : `not finished: ${summary.steps} block${summary.steps === 1 ? '' : 's'} decided`;
  const facts: Array<[string, string]> = [
    [
      'points in the space',
      `${summary.points}${summary.points < summary.combinations ? ` of ${summary.combinations} combinations (the rest break a constraint)` : ''}`,
    ],
    ['measured', `${summary.measured} in ${summary.blocks} block${summary.blocks === 1 ? '' : 's'}`],
    ['out or settled', String(summary.out)],
    [aliveText(summary), String(summary.alive)],
    [
      'tolerance',
      `${shareText(summary.tolerance)} at ${shareText(summary.confidence)} confidence${summary.tieBreak.length > 0 ? `; tie-break ${summary.tieBreak.join(', ')}` : ''}`,
    ],
    ['budget', budgetText(summary)],
  ];
  // Each row names the stated best first (the tie-break's choice or the leader), then the leader it was judged by.
  const leaderRows = [...levels, ...(across ? [across] : [])]
    .map(
      (leader) =>
        `<tr><td>${esc(leader.level === '*' ? 'across levels' : leader.level)}</td><td><code>${esc(leader.best)}</code></td><td>${
          leader.preferred ? `tie-break, as good as <code>${esc(leader.variant)}</code>` : 'the leader'
        }</td><td class="num">${
          leader.level === '*' ? `${formatNumber(leader.value * 100)}% of the level leaders` : esc(`${formatNumber(leader.value)} ${summary.unit}`.trim())
        }</td><td class="num">${leader.margin === undefined ? '—' : `+${formatNumber(leader.margin * 100)}%`}</td></tr>`,
    )
    .join('');
  const leaders =
    leaderRows.length === 0
      ? '<p class="empty">No leader yet: no point measured.</p>'
      : `<table class="data search-leaders"><thead><tr><th>level</th><th>${resolved ? `best (within ${shareText(summary.tolerance)})` : 'best so far (not resolved)'}</th><th>chosen as</th><th class="num">leader's median</th><th class="num">leader's margin over the next</th></tr></thead><tbody>${leaderRows}</tbody></table>`;
  const unresolved =
    summary.done && summary.done.unresolved.length > 0
      ? `<details class="unresolved"><summary>unresolved (${summary.done.unresolved.length})</summary><ul class="notes">${summary.done.unresolved.map((line) => `<li>${esc(line)}</li>`).join('')}</ul></details>`
      : '';
  const figures = summary.heatmaps.map(
    (map, index): Figure => ({ id: `search-${index}`, title: `Response surface at ${map.level}`, svg: heatmapSvg(summary, map) }),
  );
  return `<h2>Search</h2><div class="card search" data-search><p><strong>${state}</strong></p><p class="search-answer">${esc(searchAnswerText(summary))}</p><table class="data search-facts"><tbody>${facts
    .map(([name, value]) => `<tr><th>${esc(name)}</th><td>${esc(value)}</td></tr>`)
    .join('')}</tbody></table>${leaders}${unresolved}${pointTableHtml(summary)}</div>${
    summary.heatmaps.length > 0 ? `<h2>Response surface</h2><p class="muted">${esc(caption(summary, summary.heatmaps[0]!))}</p>${figuresHtml(figures)}` : ''
  }`;
}

export function searchMarkdown(summary: SearchSummary): string {
  const parts = [`## Search\n\n${markdownCodeBlock(formatSearchSummary(summary))}`, `### Decisions per point\n\n${pointTableMarkdown(summary)}`];
  if (summary.heatmaps.length > 0) {
    parts.push(`## Response surface\n\n_${escapeMarkdownCell(caption(summary, summary.heatmaps[0]!))}_`);
    for (const map of summary.heatmaps) parts.push(`### ${escapeMarkdownCell(map.level)}\n\n${heatmapTable(summary, map)}`);
  }
  return `${parts.join('\n\n')}\n`;
}

/** The search's per-point table (search-format.ts searchPointTable), in place of verdicts against a baseline. */
function pointTableHtml(summary: SearchSummary): string {
  const { header, rows, notes } = searchPointTable(summary);
  if (rows.length === 0) return '';
  return `<h3>Decisions per point</h3><table class="data search-points"><thead><tr>${header.map((title) => `<th>${esc(title)}</th>`).join('')}</tr></thead><tbody>${rows
    .map(
      (row, index) =>
        `<tr data-status="${esc(summary.table[index]!.status)}"><td><code>${esc(row[0]!)}</code></td>${row
          .slice(1)
          .map((text) => `<td>${esc(text)}</td>`)
          .join('')}</tr>`,
    )
    .join('')}</tbody></table>${notes.map((note) => `<p class="muted">${esc(note)}</p>`).join('')}`;
}

function pointTableMarkdown(summary: SearchSummary): string {
  const { header, rows, notes } = searchPointTable(summary);
  if (rows.length === 0) return 'No point measured yet.';
  return [
    `| ${header.map(escapeMarkdownCell).join(' | ')} |`,
    `|${header.map(() => ' --- |').join('')}`,
    ...rows.map((row) => `| ${row.map(escapeMarkdownCell).join(' | ')} |`),
    '',
    ...notes.map((note) => `_${escapeMarkdownCell(note)}_`),
  ].join('\n');
}

/**
 * What a cell shows, said once for every heatmap of the run: the axes' knobs, how the others are folded in (the
 * best measured point over them), the marks.
 */
function caption(summary: SearchSummary, map: SearchHeatmap): string {
  const best = summary.objective.direction === 'maximize' ? 'highest' : 'lowest';
  const axes = map.y ? `${map.x.knob} (across) × ${map.y.knob} (down)` : map.x.knob;
  const others =
    map.others.length === 0
      ? ''
      : `; each cell shows one point over the other knobs (${map.others.join(', ')}): the one the search marked, else the ${best} median, the knobs on the axes being the two whose values move the measured ${summary.objective.metric} most`;
  return (
    `Median ${summary.objective.metric} of each measured point at each load level over ${axes}${others}. ` +
    `The marks are the search's decisions at each level, as in the per-point table: ★ the level's stated best (the answer there), ◆ its leader where the tie-break chose another point, ≈ a point the search judged as good (within ${shareText(summary.tolerance)} at ${shareText(summary.confidence)} confidence); a cell without a mark may not be called as good from its median. · not measured, × no valid point (a constraint).`
  );
}

function heatmapSvg(summary: SearchSummary, map: SearchHeatmap): string {
  return heatmapChart(
    `${summary.objective.metric} at ${map.level}`,
    { x: map.x.knob, xValues: map.x.values, ...(map.y && { y: map.y.knob }), yValues: map.y?.values ?? [''] },
    map.cells.map((cell) => ({
      x: cell.x,
      y: cell.y,
      state: cell.state,
      ...(cell.value !== undefined && { value: cell.value }),
      ...(cell.mark && { mark: cell.mark }),
    })),
    { unit: summary.unit, higherIsBetter: summary.objective.direction === 'maximize' },
  );
}

/** The heatmap as a Markdown table: rows the y knob's values, columns the x knob's; marks as in the caption. */
function heatmapTable(summary: SearchSummary, map: SearchHeatmap): string {
  const rows = map.y?.values ?? [''];
  const corner = map.y ? `${map.y.knob} ↓ ${map.x.knob} →` : map.x.knob;
  const text = (cell: SearchHeatmap['cells'][number]): string => {
    if (cell.state === 'invalid') return '×';
    if (cell.state === 'unmeasured' || cell.value === undefined) return '·';
    return `${cell.mark ? `${HEAT_MARK_SYMBOL[cell.mark]} ` : ''}${formatNumber(cell.value)}`;
  };
  const lines = [
    `| ${escapeMarkdownCell(corner)} | ${map.x.values.map(escapeMarkdownCell).join(' | ')} |`,
    `| --- |${map.x.values.map(() => ' ---: |').join('')}`,
    ...rows.map(
      (row, y) => `| ${escapeMarkdownCell(row)} | ${map.x.values.map((_, x) => text(map.cells.find((cell) => cell.x === x && cell.y === y)!)).join(' | ')} |`,
    ),
  ];
  const leader = leadersOf(summary).levels.find((entry) => entry.level === map.level);
  return `${lines.join('\n')}${leader ? `\n\n${escapeMarkdownCell(leaderText(leader, summary.unit))}` : ''}`;
}
