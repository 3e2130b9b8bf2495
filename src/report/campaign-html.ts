import type { BestVerdict, HolmVerdict } from '../experiment/analysis/best.js';
import { metricUnit } from '../experiment/spec/metrics.js';
import type { MetricName, ResolvedExperiment } from '../experiment/spec/types.js';
import {
  acceptanceByPositionMedians,
  constraintsText,
  medianFigure,
  orderedVariants,
  rankingStatus,
  SPEC_VIEW_METRICS,
} from '../experiment/text/best-format.js';
import { metricDef } from '../metrics/catalog.js';
import type { TrialRecord } from '../store/types.js';
import { formatChange, formatChangeInterval, formatNumber, formatPValue } from '../util/format.js';
import { parameterChart, positionBarChart, type XYSeries } from './charts.js';
import { escapeHtml as esc } from './escape.js';
import type { Figure } from './figures.js';

export const CAMPAIGN_CSS = `
table.pairwise td.better { background:var(--good-bg); color:var(--good); font-weight:600; }
table.pairwise td.worse { background:var(--bad-bg); color:var(--bad); }
table.pairwise td.self { color:var(--muted); text-align:center; }
`;

export function bestConfigHtml(experiment: ResolvedExperiment, best: BestVerdict): string {
  const { objective } = best;
  const unit = metricUnit(objective.metric) || objective.metric;
  const constraints = constraintsText(objective);
  const effects = [
    best.vsBaseline && `<li>vs the baseline (<code>${esc(experiment.baseline)}</code>): ${effectHtml(best.vsBaseline)}</li>`,
    best.vsRunnerUp &&
      best.runnerUp !== experiment.baseline &&
      `<li>vs the runner-up (<code>${esc(best.runnerUp)}</code>): ${effectHtml(best.vsRunnerUp)}</li>`,
  ].filter(Boolean);
  const ranking = `<table class="data ranking"><thead><tr><th class="num">rank</th><th>config</th><th class="num">median ${esc(unit)}</th><th class="num">trials</th><th>status</th></tr></thead><tbody>${best.ranking
    .map(
      (row) =>
        `<tr class="${row.variant === experiment.baseline ? 'baseline' : ''}"><td class="num">${row.rank}</td><td><code>${esc(row.variant)}</code></td><td class="num">${formatNumber(row.median)}</td><td class="num">${row.n}</td><td>${
          row.feasible && !row.eliminated && row.variant === best.winner
            ? [winnerPill(best), esc(rankingStatus(row))].filter(Boolean).join(' ')
            : esc(rankingStatus(row))
        }</td></tr>`,
    )
    .join('')}</tbody></table>`;
  const header = `<tr><th>row vs column</th>${best.ranking.map((row) => `<th class="num">${esc(row.variant)}</th>`).join('')}</tr>`;
  const matrix = `<table class="data pairwise"><thead>${header}</thead><tbody>${best.matrix
    .map(
      (cells, index) =>
        `<tr><th>${esc(best.ranking[index]!.variant)}</th>${cells
          .map((cell) =>
            cell.row === cell.column
              ? '<td class="self">·</td>'
              : `<td class="num ${cell.better ? 'better' : cell.worse ? 'worse' : ''}" data-row="${esc(cell.row)}" data-column="${esc(cell.column)}" title="change ${esc(formatChange(cell.ratio))}, CI ${esc(formatChangeInterval(cell.ciLow, cell.ciHigh))}, p ${esc(formatPValue(cell.pValue))}, Holm-adjusted p ${esc(formatPValue(cell.pAdjusted))}">${esc(formatChange(cell.ratio))}</td>`,
          )
          .join('')}</tr>`,
    )
    .join('')}</tbody></table>`;
  return `<div class="card best"><p><strong>${esc(best.conclusion)}</strong></p>${best.warnings.length > 0 ? `<ul class="notes">${best.warnings.map((warning) => `<li>warning: ${esc(warning)}</li>`).join('')}</ul>` : ''}<p class="muted">${esc(objective.direction)} ${esc(objective.metric)} on ${esc(objective.workload)}${
    constraints ? `, subject to ${esc(constraints)}` : ''
  }</p>${effects.length > 0 ? `<ul>${effects.join('')}</ul>` : ''}</div>
<h2>Ranking</h2>${ranking}
<h2>Pairwise comparisons</h2><p class="muted">Change of the row's median vs the column's; green/red: significantly better/worse after Holm correction over all pairs.</p>${matrix}`;
}

/** The label is the Holm-corrected one, as in the ranking (best.ts `holmVerdict`). */
function effectHtml(verdict: HolmVerdict): string {
  return `${esc(formatChange(verdict.ratio))} (CI ${esc(formatChangeInterval(verdict.ciLow, verdict.ciHigh))}, p ${esc(formatPValue(verdict.pValue))}, Holm p ${esc(formatPValue(verdict.pAdjusted))}): <span class="pill ${verdict.label === 'faster' || verdict.label === 'slower' ? verdict.label : 'neutral'}">${esc(verdict.label)}</span>`;
}

/** Green "winner" only when the verdict says so (significantly better than every other); else a neutral "ranks first". */
function winnerPill(best: BestVerdict): string {
  return best.clear || best.runnerUp === undefined
    ? '<span class="pill faster">winner</span>'
    : '<span class="pill neutral">ranks first (not significant)</span>';
}

/** Speculative-decoding table: the spec view's figures and acceptance by draft position, medians over trials. */
export function specTableHtml(experiment: ResolvedExperiment, trials: readonly TrialRecord[]): string {
  const rows = orderedVariants(experiment).flatMap((variant) =>
    experiment.workloads.map((workload) => {
      const own = trials.filter((trial) => trial.variant === variant.name && trial.workload === workload.label);
      const cells = SPEC_VIEW_METRICS.map((metric) => {
        const value = medianFigure(own, metric);
        return `<td class="num">${value === undefined ? '—' : esc(metricDef(metric).format(value))}</td>`;
      });
      const byPosition = acceptanceByPositionMedians(own);
      const positions = byPosition.length === 0 ? '-' : byPosition.map((value) => (value * 100).toFixed(0)).join('/');
      return `<tr><td><code>${esc(variant.name)}</code></td><td>${esc(workload.label)}</td>${cells.join('')}<td class="num by-position">${positions}</td></tr>`;
    }),
  );
  const heads = SPEC_VIEW_METRICS.map((metric) => `<th class="num" title="${esc(metricDef(metric).description)}">${esc(metricDef(metric).header)}</th>`);
  return `<table class="data spec"><thead><tr><th>variant</th><th>workload</th>${heads.join('')}<th class="num" title="share of drafts whose i-th token was accepted, by draft position">accept % by pos</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

/** Medians of a metric per (variant, workload) over a run's trials. */
function medianOf(trials: readonly TrialRecord[], variant: string, workload: string, metric: MetricName): number | undefined {
  return medianFigure(
    trials.filter((trial) => trial.variant === variant && trial.workload === workload),
    metric,
  );
}

/**
 * Campaign charts: the objective against each numeric grid parameter (a value axis in parameter order, not a line
 * through categories), and with several concurrency levels the Pareto views per config: per-user vs total tok/s,
 * and total tok/s vs TTFT p99.
 */
export function campaignFigures(experiment: ResolvedExperiment, best: BestVerdict, trials: readonly TrialRecord[]): Figure[] {
  const figures: Figure[] = [];
  const { objective } = best;
  const gridVariants = orderedVariants(experiment).filter((variant) => Object.keys(variant.params).length > 0);
  const parameters = [...new Set(gridVariants.flatMap((variant) => Object.keys(variant.params)))];
  for (const parameter of parameters.filter((name) => gridVariants.every((variant) => typeof variant.params[name] === 'number'))) {
    const series: XYSeries[] = experiment.workloads.map((workload) => ({
      name: workload.label,
      points: gridVariants.flatMap((variant) => {
        const value = medianOf(trials, variant.name, workload.label, objective.metric);
        return value === undefined ? [] : [[variant.params[parameter] as number, value] as [number, number]];
      }),
    }));
    figures.push({
      id: `param-${parameter}`,
      title: `${objective.metric} vs ${parameter}`,
      svg: parameterChart(
        `${objective.metric} vs ${parameter}`,
        parameter,
        metricUnit(objective.metric) || objective.metric,
        series.filter((line) => line.points.length > 0),
      ),
    });
  }
  const byPosition = orderedVariants(experiment).flatMap((variant) =>
    experiment.workloads.flatMap((workload) => {
      const values = acceptanceByPositionMedians(trials.filter((trial) => trial.variant === variant.name && trial.workload === workload.label));
      const name = experiment.workloads.length > 1 ? `${variant.name} · ${workload.label}` : variant.name;
      return values.length === 0 ? [] : [{ name, values }];
    }),
  );
  if (byPosition.length > 0) {
    figures.push({ id: 'acceptance-by-position', title: 'Acceptance by draft position', svg: positionBarChart('Acceptance by draft position', byPosition) });
  }
  const levels = experiment.workloads.filter((workload) => workload.concurrency !== undefined);
  if (levels.length >= 2) {
    const pareto = (x: MetricName, y: MetricName): XYSeries[] =>
      orderedVariants(experiment).map((variant) => ({
        name: variant.name,
        points: levels.flatMap((workload) => {
          const [px, py] = [medianOf(trials, variant.name, workload.label, x), medianOf(trials, variant.name, workload.label, y)];
          return px === undefined || py === undefined ? [] : [[px, py] as [number, number]];
        }),
      }));
    figures.push({
      id: 'pareto-user',
      title: 'Per-user vs total throughput',
      svg: parameterChart(
        'Pareto: tok/s per user vs total tok/s',
        'total tok/s',
        'tok/s per user',
        pareto('outputTokensPerSecond', 'perStreamTokensPerSecond'),
      ),
    });
    figures.push({
      id: 'pareto-ttft',
      title: 'Throughput vs TTFT p99',
      svg: parameterChart('Pareto: total tok/s vs TTFT p99', 'TTFT p99 (ms)', 'total tok/s', pareto('ttftP99Ms', 'outputTokensPerSecond')),
    });
  }
  return figures;
}
