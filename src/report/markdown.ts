/** The Markdown summary of a run: verdict table, environment, notes, work notes, drift notes (for PRs, chat, terminals). */

import { CATEGORY_COLUMNS, type CategoryRow } from '../experiment/spec/categories.js';
import { sideColumns } from '../experiment/spec/side-figures.js';
import { formatChange, formatChangeInterval, formatDuration, formatPValue, runDurationMs } from '../util/format.js';
import { escapeMarkdownCell as cell } from './escape.js';
import { medianColumn, type RunReport, type VerdictRow } from './model.js';

export function renderMarkdown(report: RunReport): string {
  const lines: string[] = [];
  lines.push(`# ${cell(report.experimentName)} — run ${report.runId}`, '');
  if (report.description) lines.push(cell(report.description), '');
  lines.push(
    `- Status: **${report.status}**${report.message ? ` — ${cell(report.message)}` : ''}`,
    `- Started: ${report.startedAt}${report.finishedAt ? ` (took ${formatDuration(runDurationMs(report.startedAt, report.finishedAt))})` : ''}`,
    `- Trials: ${report.trialCount}${report.plannedTrials !== undefined ? ` of ${report.plannedTrials} planned` : ''}`,
    `- Metric: ${cell(report.metric)}${report.metricUnit ? ` (${report.metricUnit})` : ''}${report.baseline === undefined ? '' : `; baseline: ${cell(report.baseline)}; ${Math.round(report.confidence * 100)}% CI`}`,
    `- servelab ${cell(report.servelabVersion)}${report.gitSha ? ` (${cell(report.gitSha)})` : ''}`,
    '',
  );
  // A search has no baseline: its decisions per point (the search section) stand in place of verdicts.
  if (report.baseline !== undefined) lines.push(...verdictsMarkdown(report));

  if (report.categories.length > 0) {
    lines.push(
      '## Per category',
      '',
      ...markdownTable<CategoryRow>(
        CATEGORY_COLUMNS.map((column) => ({ title: column.title, numeric: column.numeric, cell: (row: CategoryRow) => cell(column.cell(row)) })),
        report.categories,
      ),
    );
    lines.push('');
  }

  lines.push('## Environment', '');
  const environment = report.environment;
  if (environment.common.length === 0) {
    lines.push('No fingerprint recorded.', '');
  } else {
    lines.push(
      `${environment.distinctFingerprints} distinct fingerprint(s). Shared by all trials:`,
      '',
      ...markdownTable(
        [
          { title: 'fact', cell: (fact) => cell(fact.key) },
          { title: 'value', cell: (fact) => cell(fact.value) },
        ],
        environment.common,
      ),
    );
    lines.push('');
    for (const variant of environment.variants) {
      if (variant.changes.length === 0) continue;
      lines.push(
        `Variant ${cell(variant.variant)} differs from ${cell(environment.reference.label)} in: ${variant.changes.map((change) => `${cell(change.key)} = ${cell(change.after ?? '(unset)')}`).join('; ')}`,
        '',
      );
    }
  }

  if (report.notes.length > 0) lines.push('## Notes', '', ...report.notes.map((note) => `- ${cell(note)}`), '');
  if (report.workNotes.length > 0)
    lines.push('## Work notes', '', 'What the trials did that their figures hide.', '', ...report.workNotes.map((note) => `- ${cell(note)}`), '');
  lines.push('## Drift notes', '');
  if (report.driftNotes.length === 0) lines.push(report.trialCount === 0 ? 'None yet.' : 'None: every variant kept one environment throughout the run.');
  else for (const note of report.driftNotes) lines.push(`- ${cell(note)}`);
  lines.push('');
  if (report.machine.length > 0) {
    lines.push('## Machine state', '');
    for (const trial of report.machine) {
      lines.push(`- ${cell(trial.label)}`);
      for (const line of [...trial.lines, ...(trial.serverMetricsNote ? [trial.serverMetricsNote] : [])]) lines.push(`  - ${cell(line)}`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

interface MarkdownColumn<Row> {
  /** Markdown already (escaped where it holds stored text). */
  title: string;
  /** Right-aligned. */
  numeric?: boolean;
  cell: (row: Row) => string;
}

/** A table whose header, delimiter and rows come from one column list, so their counts cannot disagree. */
function markdownTable<Row>(columns: ReadonlyArray<MarkdownColumn<Row>>, rows: readonly Row[]): string[] {
  return [
    `| ${columns.map((column) => column.title).join(' | ')} |`,
    `|${columns.map((column) => (column.numeric ? ' ---: |' : ' --- |')).join('')}`,
    ...rows.map((row) => `| ${columns.map((column) => column.cell(row)).join(' | ')} |`),
  ];
}

/** The verdicts vs the baseline, with their method and note. */
function verdictsMarkdown(report: RunReport): string[] {
  const lines = ['## Verdicts', ''];
  if (report.rows.length === 0) {
    lines.push('No trials measured yet.', '');
  } else {
    const side = sideColumns(report.rows);
    const median = medianColumn(report);
    const columns: Array<MarkdownColumn<VerdictRow>> = [
      ...(report.workloads.length > 1 ? [{ title: 'workload', cell: (row: VerdictRow) => cell(row.workload) }] : []),
      { title: 'variant', cell: (row) => cell(row.variant) },
      { title: 'trials', numeric: true, cell: (row) => String(row.trials) },
      { title: cell(median.title), numeric: true, cell: median.cell },
      { title: 'change vs baseline', numeric: true, cell: (row) => (row.isBaseline ? '—' : formatChange(row.ratio)) },
      { title: `${Math.round(report.confidence * 100)}% CI of change`, cell: (row) => (row.isBaseline ? '—' : formatChangeInterval(row.ciLow, row.ciHigh)) },
      { title: 'p-value', numeric: true, cell: (row) => formatPValue(row.pValue) },
      { title: 'failed requests (this variant)', numeric: true, cell: (row) => String(row.failedRequests) },
      { title: 'invalid trials (this variant)', numeric: true, cell: (row) => String(row.invalidTrials) },
      ...side.map((column) => ({ title: cell(column.title), numeric: true, cell: column.cell })),
      { title: 'verdict', cell: (row) => (row.significant && row.feasible ? `**${row.outcome}**` : row.outcome) },
    ];
    lines.push(...markdownTable(columns, report.rows));
    lines.push('', `_${report.verdictMethod}._`, '');
    if (report.verdictsNote) lines.push(`_${report.verdictsNote}_`, '');
  }
  return lines;
}
