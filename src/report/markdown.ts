/** The Markdown summary of a run: verdict table, environment, drift notes (for PRs, chat, terminals). */

import { sideColumns } from '../experiment/spec/side-figures.js';
import { ACCEPTANCE_HEADER, acceptanceCell } from '../experiment/text/format.js';
import { formatChange, formatChangeInterval, formatDuration, formatNumber, formatPValue, runDurationMs } from '../util/format.js';
import { escapeMarkdownCell as cell } from './escape.js';
import type { RunReport } from './model.js';

export function renderMarkdown(report: RunReport): string {
  const lines: string[] = [];
  lines.push(`# ${cell(report.experimentName)} — run ${report.runId}`, '');
  if (report.description) lines.push(cell(report.description), '');
  lines.push(
    `- Status: **${report.status}**${report.message ? ` — ${cell(report.message)}` : ''}`,
    `- Started: ${report.startedAt}${report.finishedAt ? ` (took ${formatDuration(runDurationMs(report.startedAt, report.finishedAt))})` : ''}`,
    `- Trials: ${report.trialCount}${report.plannedTrials !== undefined ? ` of ${report.plannedTrials} planned` : ''}`,
    `- Metric: ${cell(report.metric)}${report.metricUnit ? ` (${report.metricUnit})` : ''}; baseline: ${cell(report.baseline)}; ${Math.round(report.confidence * 100)}% CI`,
    `- servelab ${cell(report.servelabVersion)}${report.gitSha ? ` (${cell(report.gitSha)})` : ''}`,
    '',
    '## Verdicts',
    '',
  );
  if (report.rows.length === 0) {
    lines.push('No trials measured yet.', '');
  } else {
    const multiWorkload = report.workloads.length > 1;
    const side = sideColumns(report.rows);
    lines.push(
      `| ${multiWorkload ? 'workload | ' : ''}variant | trials | median ${cell(report.metricUnit || report.metric)} | change vs baseline | ${Math.round(report.confidence * 100)}% CI of change | p-value | failed requests (this variant) | invalid trials (this variant) | ${side.map((column) => `${column.title} | `).join('')}verdict |`,
      `|${multiWorkload ? ' --- |' : ''} --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |`,
    );
    for (const row of report.rows) {
      const verdict = row.significant && row.feasible ? `**${row.outcome}**` : row.outcome;
      lines.push(
        `| ${multiWorkload ? `${cell(row.workload)} | ` : ''}${cell(row.variant)} | ${row.trials} | ${formatNumber(row.median)} | ${row.isBaseline ? '—' : formatChange(row.ratio)} | ${row.isBaseline ? '—' : formatChangeInterval(row.ciLow, row.ciHigh)} | ${formatPValue(row.pValue)} | ${row.failedRequests} | ${row.invalidTrials} | ${side.map((column) => `${column.cell(row)} | `).join('')}${verdict} |`,
      );
    }
    lines.push('', `_${report.verdictMethod}._`, '');
    if (report.verdictsNote) lines.push(`_${report.verdictsNote}_`, '');
  }

  if (report.categories.length > 0) {
    lines.push(
      '## Per category',
      '',
      `| variant | workload | category | trials | ok | failed | tok/s | TTFT ms p50 | TPOT ms p50 | ${ACCEPTANCE_HEADER} |`,
      '| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    );
    for (const row of report.categories) {
      lines.push(
        `| ${cell(row.variant)} | ${cell(row.workload)} | ${cell(row.category)} | ${row.trials} | ${row.completed} | ${row.failed} | ${formatNumber(row.outputTokensPerSecond ?? null)} | ${formatNumber(row.ttftMedianMs ?? null)} | ${formatNumber(row.tpotMedianMs ?? null)} | ${acceptanceCell(row)} |`,
      );
    }
    lines.push('');
  }

  lines.push('## Environment', '');
  const environment = report.environment;
  if (environment.common.length === 0) {
    lines.push('No fingerprint recorded.', '');
  } else {
    lines.push(`${environment.distinctFingerprints} distinct fingerprint(s). Shared by all trials:`, '', '| fact | value |', '| --- | --- |');
    for (const fact of environment.common) lines.push(`| ${cell(fact.key)} | ${cell(fact.value)} |`);
    lines.push('');
    for (const variant of environment.variants) {
      if (variant.changes.length === 0) continue;
      lines.push(
        `Variant ${cell(variant.variant)} differs from the baseline in: ${variant.changes.map((change) => `${cell(change.key)} = ${cell(change.after ?? '(unset)')}`).join('; ')}`,
        '',
      );
    }
  }

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
