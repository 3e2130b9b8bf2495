/**
 * The self-contained HTML report: inline CSS, inline SVG charts, no script, no external resource. Its sections are
 * exported as fragments so `servelab ui` shows exactly the same tables. Every stored string goes through escapeHtml.
 */

import { CATEGORY_COLUMNS } from '../experiment/spec/categories.js';
import { sideColumns } from '../experiment/spec/side-figures.js';
import type { FingerprintChange } from '../fingerprint/types.js';
import { formatChange, formatChangeInterval, formatDuration, formatNumber, formatPercent, formatPValue, runDurationMs } from '../util/format.js';
import { CAMPAIGN_CSS } from './campaign-html.js';
import type { RunComparison } from './compare.js';
import { EQUIVALENCE_CSS } from './equivalence-html.js';
import { escapeHtml as esc } from './escape.js';
import type { Figure } from './figures.js';
import { machineStateHtml } from './machine.js';
import { medianColumn, type RunReport } from './model.js';

/** Styles of the report fragments; the UI page includes them too. */
export const REPORT_CSS = `
:root { --text:#1f2328; --muted:#59636e; --border:#d1d9e0; --soft:#f6f8fa; --accent:#0969da;
  --good:#1a7f37; --good-bg:#dafbe1; --bad:#cf222e; --bad-bg:#ffebe9; --warn:#9a6700; --warn-bg:#fff8c5; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color:var(--text); background:#f6f8fa; }
h1 { font-size:22px; margin:0; font-weight:600; }
h2 { font-size:16px; margin:28px 0 10px; font-weight:600; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size:12.5px; }
.muted { color:var(--muted); }
.card { background:#fff; border:1px solid var(--border); border-radius:8px; padding:16px 18px; }
.pill { display:inline-block; padding:1px 10px; border-radius:999px; font-size:12px; font-weight:600; border:1px solid transparent; vertical-align:middle; white-space:nowrap; }
.pill.done, .pill.ready, .pill.faster { background:var(--good-bg); color:var(--good); border-color:#aceebb; }
.pill.failed, .pill.drift, .pill.slower, .pill.infeasible { background:var(--bad-bg); color:var(--bad); border-color:#ffcecb; }
.pill.running, .pill.starting { background:#ddf4ff; color:var(--accent); border-color:#b6e3ff; }
.pill.interrupted, .pill.stopped, .pill.neutral { background:var(--soft); color:var(--muted); border-color:var(--border); }
.facts { display:grid; grid-template-columns:repeat(auto-fit, minmax(150px, 1fr)); gap:12px; margin-top:16px; }
.fact { background:#fff; border:1px solid var(--border); border-radius:8px; padding:10px 14px; }
.fact .label { font-size:12px; color:var(--muted); }
.fact .value { font-size:16px; font-weight:600; margin-top:2px; word-break:break-word; }
table.data { width:100%; border-collapse:collapse; background:#fff; border:1px solid var(--border); border-radius:8px; overflow:hidden; }
table.data th, table.data td { padding:7px 12px; border-bottom:1px solid #eaeef2; text-align:left; vertical-align:top; }
table.data th { background:var(--soft); font-size:12px; font-weight:600; color:var(--muted); text-transform:uppercase; letter-spacing:.03em; }
table.data td.num, table.data th.num { text-align:right; font-variant-numeric:tabular-nums; }
table.data td.num { white-space:nowrap; }
table.data td.warn { color:#b45309; font-weight:600; }
table.data tr:last-child td { border-bottom:none; }
table.data tr.baseline td { background:#fbfcfd; color:var(--muted); }
table.data tr.alarm td { background:var(--bad-bg); }
.figures { display:grid; grid-template-columns:repeat(auto-fill, minmax(460px, 1fr)); gap:16px; }
figure { margin:0; background:#fff; border:1px solid var(--border); border-radius:8px; padding:8px; overflow:hidden; }
figure svg { display:block; width:100%; max-width:760px; height:auto; margin:0 auto; }
.notes { list-style:none; padding:0; margin:0; }
.notes li { background:var(--warn-bg); border:1px solid #f5e0a0; border-radius:6px; padding:8px 12px; margin-bottom:6px; }
.notes li.alarm { background:var(--bad-bg); border-color:#ffcecb; color:var(--bad); font-weight:600; }
.empty { color:var(--muted); font-style:italic; }
.change-before { color:var(--bad); text-decoration:line-through; }
.change-after { color:var(--good); }
`;

/** `campaign`: the conclusion's sections (a search's answer, the best config, quality, lanes, bisect), placed after the verdicts, each with its heading. */
export function renderHtmlReport(report: RunReport, figures: Figure[], comparison?: RunComparison, campaign?: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(report.experimentName)} — run ${report.runId} · servelab report</title>
<style>${REPORT_CSS}${CAMPAIGN_CSS}${EQUIVALENCE_CSS}
main { max-width:1240px; margin:0 auto; padding:28px 28px 48px; }
header.top { display:flex; align-items:center; gap:12px; flex-wrap:wrap; }
footer { margin-top:40px; font-size:12px; color:var(--muted); }
</style>
</head>
<body>
<main>
<header class="top"><h1>${esc(report.experimentName)} <span class="muted">· run ${report.runId}</span></h1>${statusPill(report.status)}</header>
${report.description ? `<p class="muted">${esc(report.description)}</p>` : ''}
${runFactsHtml(report)}
${verdictSectionHtml(report)}
${campaign ?? ''}
<h2>Charts</h2>
${figuresHtml(figures)}
${trialTableHtml(report)}
${report.categories.length > 0 ? `<h2>Per category</h2>${categoryTableHtml(report)}` : ''}
${notesHtml(report)}
<h2>Machine state</h2>
${machineStateHtml(report.machine)}
${comparison ? `<h2>Compared with run ${comparison.runA}</h2>${comparisonHtml(comparison)}` : ''}
<h2>Environment</h2>
${environmentHtml(report)}
<footer>Generated by servelab ${esc(report.servelabVersion)}${report.gitSha ? ` (${esc(report.gitSha)})` : ''} on ${esc(new Date().toISOString())}.</footer>
</main>
</body>
</html>
`;
}

export function statusPill(status: string): string {
  return `<span class="pill ${esc(status)}">${esc(status)}</span>`;
}

export function runFactsHtml(report: RunReport): string {
  const facts: Array<[string, string]> = [
    ['Status', report.status],
    ['Trials done', trialsDone(report.trialCount, report.plannedTrials)],
    ['Duration', formatDuration(runDurationMs(report.startedAt, report.finishedAt))],
    ...(report.baseline !== undefined ? [['Baseline', report.baseline] as [string, string]] : []),
    [`Metric · ${report.metric}`, report.metricUnit || report.metric],
    ['Started', report.startedAt.replace('T', ' ').replace(/\.\d+Z$/, 'Z')],
  ];
  return `<div class="facts">${facts.map(([label, value]) => `<div class="fact"><div class="label">${esc(label)}</div><div class="value">${esc(value)}</div></div>`).join('')}</div>${
    report.message ? `<p class="muted">${esc(report.message)}</p>` : ''
  }`;
}

/** "2/20": trials stored of those planned, worded the same in the facts, the UI's sidebar and its progress. */
export function trialsDone(stored: number, planned: number): string {
  return `${stored}/${planned}`;
}

/** Verdicts vs the baseline; none for a search, whose decisions per point its own section shows (./search.ts). */
export function verdictSectionHtml(report: RunReport): string {
  return report.baseline === undefined ? '' : `<h2>Verdicts</h2>\n${verdictTableHtml(report)}`;
}

export function verdictTableHtml(report: RunReport): string {
  if (report.rows.length === 0) return '<p class="empty">No trials measured yet.</p>';
  const multiWorkload = report.workloads.length > 1;
  const confidence = `${Math.round(report.confidence * 100)}% CI`;
  const side = sideColumns(report.rows);
  const median = medianColumn(report);
  const head = `<tr>${multiWorkload ? '<th>workload</th>' : ''}<th>variant</th><th class="num">trials</th><th class="num">${esc(median.title)}</th><th class="num">change vs baseline</th><th class="num">${confidence} of change</th><th class="num">p-value</th><th class="num">failed requests (this variant)</th><th class="num">invalid trials (this variant)</th>${side.map((column) => `<th class="num">${esc(column.title)}</th>`).join('')}<th>verdict</th></tr>`;
  const body = report.rows
    .map((row) => {
      // An infeasible config's verdict is no win, however fast: never the green badge.
      const verdictClass = !row.feasible ? 'infeasible' : row.label === 'faster' || row.label === 'slower' ? row.label : 'neutral';
      return `<tr class="${row.isBaseline ? 'baseline' : ''}">${multiWorkload ? `<td>${esc(row.workload)}</td>` : ''}<td><code>${esc(row.variant)}</code></td><td class="num">${row.trials}</td><td class="num">${esc(median.cell(row))}</td><td class="num">${row.isBaseline ? '—' : formatChange(row.ratio)}</td><td class="num">${row.isBaseline ? '—' : formatChangeInterval(row.ciLow, row.ciHigh)}</td><td class="num">${formatPValue(row.pValue)}</td><td class="num${row.failedRequests > 0 ? ' warn' : ''}">${row.failedRequests}</td><td class="num${row.invalidTrials > 0 ? ' warn' : ''}">${row.invalidTrials}</td>${side.map((column) => `<td class="num">${column.cell(row)}</td>`).join('')}<td><span class="pill ${verdictClass}">${esc(row.outcome)}</span></td></tr>`;
    })
    .join('');
  const note = `<p class="muted">${esc(report.verdictMethod)}.${report.verdictsNote ? ` ${esc(report.verdictsNote)}` : ''}</p>`;
  return `<table class="data verdicts"><thead>${head}</thead><tbody>${body}</tbody></table>${note}`;
}

/** Medians per dataset category: where acceptance and latency differ by what is asked. */
export function categoryTableHtml(report: RunReport): string {
  const head = `<tr>${CATEGORY_COLUMNS.map((column) => `<th${column.numeric ? ' class="num"' : ''}>${esc(column.title)}</th>`).join('')}</tr>`;
  const body = report.categories
    .map(
      (row) =>
        `<tr>${CATEGORY_COLUMNS.map((column, index) => {
          const text = esc(column.cell(row));
          // The variant is a name, shown as code like everywhere else.
          return `<td${column.numeric ? ' class="num"' : ''}>${index === 0 ? `<code>${text}</code>` : text}</td>`;
        }).join('')}</tr>`,
    )
    .join('');
  return `<table class="data categories"><thead>${head}</thead><tbody>${body}</tbody></table>`;
}

/** Every stored trial in run order, numbered as the runner's log and `servelab show` number them. */
export function trialTableHtml(report: RunReport): string {
  if (report.trialRows.length === 0) return '<p class="empty">No trials measured yet.</p>';
  // Which lane measured each trial, on a run with lanes.
  const laned = report.trialRows.some((row) => row.lane !== undefined);
  const head = `<tr><th>trial</th><th>block</th><th>variant</th><th>workload</th>${laned ? '<th>lane</th>' : ''}<th class="num">${esc(report.metricUnit || report.metric)}</th><th class="num">ok requests</th><th class="num">failed requests</th><th>finished</th></tr>`;
  const body = report.trialRows
    .map(
      (row) =>
        `<tr><td class="mono">${esc(row.number)}</td><td>${esc(row.block)}</td><td><code>${esc(row.variant)}</code></td><td>${esc(row.workload)}</td>${laned ? `<td>${esc(row.lane ?? '—')}</td>` : ''}<td class="num">${formatNumber(row.value)}</td><td class="num">${row.completed}</td><td class="num${row.failed > 0 ? ' warn' : ''}">${row.failed}</td><td class="mono">${esc(row.finishedAt.replace('T', ' ').slice(0, 19))}</td></tr>`,
    )
    .join('');
  return `<details class="trials"><summary>${report.trialRows.length} trials in run order</summary><table class="data trials"><thead>${head}</thead><tbody>${body}</tbody></table></details>`;
}

export function figuresHtml(figures: Figure[]): string {
  if (figures.length === 0) return '<p class="empty">No data to chart yet.</p>';
  // echarts SSR escapes the text it writes, so the SVG is safe to inline.
  return `<div class="figures">${figures.map((figure) => `<figure data-figure="${figure.id}" aria-label="${esc(figure.title)}">${figure.svg}</figure>`).join('')}</div>`;
}

/**
 * Notes on what was counted and work notes, each under its heading when there are any, then the drift notes, always:
 * that every variant kept one environment is news too.
 */
export function notesHtml(report: RunReport): string {
  const list = (notes: readonly string[]): string => `<ul class="notes">${notes.map((note) => `<li>${esc(note)}</li>`).join('')}</ul>`;
  return (
    (report.notes.length > 0 ? `<h2>Notes</h2>${list(report.notes)}` : '') +
    (report.workNotes.length > 0 ? `<h2>Work notes</h2><p class="muted">What the trials did that their figures hide.</p>${list(report.workNotes)}` : '') +
    `<h2>Drift notes</h2>${driftNotesHtml(report)}`
  );
}

function driftNotesHtml(report: RunReport): string {
  if (report.driftNotes.length === 0) {
    return `<p class="muted">${report.trialCount === 0 ? 'None yet.' : 'None: every variant kept one environment throughout the run.'}</p>`;
  }
  return `<ul class="notes">${report.driftNotes.map((note) => `<li class="${note.startsWith('Drift alarm') ? 'alarm' : ''}">${esc(note)}</li>`).join('')}</ul>`;
}

export function environmentHtml(report: RunReport): string {
  const environment = report.environment;
  if (environment.common.length === 0) return '<p class="empty">No fingerprint recorded.</p>';
  const shared = `<table class="data"><thead><tr><th>fact (shared by all trials)</th><th>value</th></tr></thead><tbody>${environment.common
    .map((fact) => `<tr><td><code>${esc(fact.key)}</code></td><td class="mono">${esc(fact.value)}</td></tr>`)
    .join('')}</tbody></table>`;
  const differing = environment.variants.filter((variant) => variant.changes.length > 0);
  const perVariant =
    differing.length === 0
      ? ''
      : `<h2>Variant environments vs ${esc(environment.reference.label.replace(/^the /, ''))}</h2><table class="data"><thead><tr><th>variant</th><th>fact</th><th>${esc(environment.reference.variant === report.baseline ? 'baseline' : environment.reference.variant)}</th><th>variant</th></tr></thead><tbody>${differing
          .flatMap((variant) => variant.changes.map((change) => `<tr><td><code>${esc(variant.variant)}</code></td>${changeCells(change, false)}</tr>`))
          .join('')}</tbody></table>`;
  return `<p class="muted">${environment.distinctFingerprints} distinct fingerprint(s) in this run.</p>${shared}${perVariant}`;
}

/** Fingerprint diff and drift judgement of two runs (the runner's rule); the pairs it alarms on are highlighted. */
export function comparisonHtml(comparison: RunComparison): string {
  const alarms = comparison.rows.filter((row) => row.alarm);
  const shown = alarms.filter((row) => row.variant === comparison.baseline);
  const banner = comparison.drifted
    ? `<ul class="notes">${(shown.length > 0 ? shown : alarms.slice(0, 1))
        .map((row) => `<li class="alarm">Drift alarm (${esc(row.workload)}): ${esc(row.alarm)}</li>`)
        .join('')}<li>The runner's drift rule alarms on ${alarms.length} of ${comparison.rows.length} variant/workload pairs (highlighted below).</li></ul>`
    : '<p class="muted">The runner\'s drift rule raises no alarm on these runs.</p>';
  // The drift rule compares the later run's mean (its first trials, as the runner sees them) with the earlier run's median.
  const statistic = `<p class="muted">Per pair: the median of run ${comparison.runA}'s trials against the mean of run ${comparison.runB}'s, as the runner's drift rule judges them (${esc(comparison.metric)}).</p>`;
  const rows =
    comparison.rows.length === 0
      ? '<p class="empty">The runs share no variant and workload to compare.</p>'
      : `<table class="data drift"><thead><tr><th>variant</th><th>workload</th><th class="num">run ${comparison.runA}: median</th><th class="num">run ${comparison.runB}: mean</th><th class="num">change</th><th class="num">noise band</th><th>status</th></tr></thead><tbody>${comparison.rows
          .map(
            (row) =>
              `<tr class="${row.decision.kind === 'alarm' ? 'alarm' : ''}"><td><code>${esc(row.variant)}</code></td><td>${esc(row.workload)}</td><td class="num">${formatNumber(row.check.reference)} <span class="muted">(n=${row.historySize})</span></td><td class="num">${formatNumber(row.check.current)} <span class="muted">(n=${row.currentSize})</span></td><td class="num">${formatPercent(row.check.changePct)}</td><td class="num">±${row.check.band.toFixed(1)}%</td><td><span class="pill ${row.decision.kind === 'alarm' ? 'drift' : 'neutral'}" title="${esc(row.decision.reason)}">${esc(row.status)}</span>${row.status === 'within noise' ? '' : ` ${esc(row.decision.reason)}`}</td></tr>`,
          )
          .join('')}</tbody></table>`;
  const changes =
    comparison.changes.length === 0
      ? '<p class="muted">Environment identical (baseline fingerprints match).</p>'
      : `<table class="data changes"><thead><tr><th>fact</th><th>run ${comparison.runA}</th><th>run ${comparison.runB}</th></tr></thead><tbody>${comparison.changes
          .map((change) => `<tr class="alarm">${changeCells(change)}</tr>`)
          .join('')}</tbody></table>`;
  return `${banner}${statistic}${rows}<h2>Environment diff</h2>${changes}`;
}

/** A fact before/after; `strike` marks the old value as replaced (a diff), not just different (a variant). */
function changeCells(change: FingerprintChange, strike = true): string {
  return `<td><code>${esc(change.key)}</code></td><td class="mono ${strike ? 'change-before' : 'muted'}">${esc(change.before ?? '(unset)')}</td><td class="mono change-after">${esc(change.after ?? '(unset)')}</td>`;
}
