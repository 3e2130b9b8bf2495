import { median } from 'simple-statistics';
import { type CatalogMetric, metricDef, metricsWhere } from '../../metrics/catalog.js';
import type { TrialRecord } from '../../store/types.js';
import { formatNumber, formatPercent, formatPoints, formatPValue, formatShare } from '../../util/format.js';
import type { BestVerdict, HolmVerdict, RankedConfig } from '../analysis/best.js';
import { metricUnit } from '../spec/metrics.js';
import type { Objective, ResolvedExperiment } from '../spec/types.js';
import { table } from './format.js';

/** The objective's subjectTo as read back: "ttftP99Ms < 500, outputs equivalent, accuracy >= baseline -1.0 pts". */
export function constraintsText(objective: Objective): string {
  const { outputs, outputMatch, accuracy } = objective;
  return [
    ...objective.constraints.map((constraint) => `${constraint.metric} ${constraint.op} ${constraint.value}`),
    ...(outputs ? [`outputs ${outputs}`] : []),
    ...(outputMatch ? [`outputMatch ${outputMatch.op} ${outputMatch.value}`] : []),
    ...(accuracy ? [`accuracy ${accuracy.op} ${'value' in accuracy ? accuracy.value : `baseline ${formatPoints(accuracy.baselineOffset)}`}`] : []),
  ].join(', ');
}

/** A ranking row's status: eliminated, infeasible with its reasons, or feasible with its caveats ("note: …"). */
export function rankingStatus(row: RankedConfig): string {
  if (row.eliminated) return `eliminated after block ${row.eliminated.afterPass + 1}: ${row.eliminated.reason}`;
  if (!row.feasible) return `infeasible: ${row.violations.join('; ')}`;
  return row.caveats.map((caveat) => `${caveat.kind}: ${caveat.text}`).join('; ');
}

/** Text of a best-config verdict: conclusion, winner vs baseline and runner-up, ranking, pairwise matrix. */
export function formatBestVerdict(experiment: ResolvedExperiment, best: BestVerdict): string {
  const { objective } = best;
  const unit = metricUnit(objective.metric);
  const constraints = constraintsText(objective);
  const lines = [
    `best config: ${objective.direction} ${objective.metric} (${unit}) on ${objective.workload}${constraints ? `, subject to ${constraints}` : ''}`,
    best.conclusion,
    ...best.warnings.map((warning) => `warning: ${warning}`),
  ];
  if (best.winner && best.vsBaseline) lines.push(`  vs the baseline (${experiment.baseline}): ${effect(best.vsBaseline)}`);
  if (best.winner && best.vsRunnerUp && best.runnerUp !== experiment.baseline) lines.push(`  vs the runner-up (${best.runnerUp}): ${effect(best.vsRunnerUp)}`);
  const top = best.ranking[0]?.median ?? null;
  lines.push(
    '',
    table(
      ['rank', 'config', `median ${unit}`, 'vs #1', 'n', 'status'],
      best.ranking.map((row) => [
        String(row.rank),
        row.variant + (row.variant === experiment.baseline ? ' (baseline)' : ''),
        formatNumber(row.median),
        row.rank === 1 || row.median === null || top === null ? '' : percent(row.median / top),
        String(row.n),
        rankingStatus(row),
      ]),
    ),
    '',
    'pairwise (row vs column, change of medians; * = significant after Holm correction):',
    table(
      ['', ...best.ranking.map((row) => row.variant)],
      best.matrix.map((cells, index) => [
        best.ranking[index]!.variant,
        ...cells.map((cell) => (cell.row === cell.column ? '·' : `${percent(cell.ratio)}${cell.better || cell.worse ? '*' : ''}`)),
      ]),
    ),
  );
  return lines.join('\n');
}

/** "+220.0% (CI …, p 0.029, Holm p 0.086, n 4/4): no significant difference": the label is the Holm-corrected one. */
function effect(verdict: HolmVerdict): string {
  const ci = verdict.ciLow === null || verdict.ciHigh === null ? 'CI n/a' : `CI ${percent(verdict.ciLow)} … ${percent(verdict.ciHigh)}`;
  const p =
    verdict.pValue === null ? 'p n/a' : `p ${formatPValue(verdict.pValue)}${verdict.pAdjusted === null ? '' : `, Holm p ${formatPValue(verdict.pAdjusted)}`}`;
  return `${percent(verdict.ratio)} (${ci}, ${p}, n ${verdict.n.baseline}/${verdict.n.candidate}): ${verdict.label}`;
}

function percent(ratio: number | null): string {
  return ratio === null || !Number.isFinite(ratio) ? 'n/a' : formatPercent((ratio - 1) * 100);
}

/** The speculative-decoding view's figures (text and HTML): throughput and decode latency, then the catalogue's speculative ones. */
export const SPEC_VIEW_METRICS: readonly CatalogMetric[] = [
  'outputTokensPerSecond',
  'tpotMedianMs',
  'itlP99Ms',
  ...metricsWhere((def) => def.group === 'speculative'),
];

/** Median of a catalogue figure over trials, undefined when none measured it. */
export function medianFigure(trials: readonly TrialRecord[], metric: CatalogMetric): number | undefined {
  const values = trials.flatMap((trial) => {
    const value = trial.metrics[metric];
    return value !== undefined && Number.isFinite(value) ? [value] : [];
  });
  return values.length === 0 ? undefined : median(values);
}

/**
 * Speculative-decoding view: per variant and workload, throughput next to TPOT, ITL, acceptance rate and mean
 * accepted length (bonus token included) and decode time per verify step, medians over trials. Variants in grid-parameter order.
 */
export function formatSpecView(experiment: ResolvedExperiment, trials: readonly TrialRecord[]): string {
  const rows = orderedVariants(experiment).flatMap((variant) =>
    experiment.workloads.map((workload) => {
      const own = trials.filter((trial) => trial.variant === variant.name && trial.workload === workload.label);
      return [
        variant.name,
        workload.label,
        ...SPEC_VIEW_METRICS.map((metric) => {
          const value = medianFigure(own, metric);
          return value === undefined ? '-' : metricDef(metric).format(value);
        }),
        tierCell(own),
        positionCell(own),
        String(own.length),
      ];
    }),
  );
  return table(['variant', 'workload', ...SPEC_VIEW_METRICS.map((metric) => metricDef(metric).header), 'tier s/d', 'accept % by pos', 'n'], rows);
}

/**
 * SGLang's adaptive tier at the trials' ends (draft steps / draft tokens, e.g. `3/4`), every distinct one when they
 * differ (`3/4, 5/6`); `-` when no trial reports it.
 */
function tierCell(trials: readonly TrialRecord[]): string {
  const tiers = trials.flatMap((trial) =>
    trial.metrics.specNumSteps === undefined || trial.metrics.specNumDraftTokens === undefined
      ? []
      : [`${trial.metrics.specNumSteps}/${trial.metrics.specNumDraftTokens}`],
  );
  return tiers.length === 0 ? '-' : [...new Set(tiers)].join(', ');
}

/** Median acceptance per draft position over the trials that report it, e.g. `91%/78%/60%`; `-` when none does. */
function positionCell(trials: readonly TrialRecord[]): string {
  const medians = acceptanceByPositionMedians(trials);
  return medians.length === 0 ? '-' : medians.map(formatShare).join('/');
}

/** Median share of drafts whose i-th token was accepted, per position, over the trials that report it; [] when none does. */
export function acceptanceByPositionMedians(trials: readonly TrialRecord[]): number[] {
  const reported = trials.flatMap((trial) => (trial.metrics.acceptanceByPosition ? [trial.metrics.acceptanceByPosition] : []));
  const positions = Math.max(0, ...reported.map((list) => list.length));
  return Array.from({ length: positions }, (_, position) => median(reported.flatMap((list) => (list[position] === undefined ? [] : [list[position]!]))));
}

/** Hand-written variants first, then grid variants sorted by their parameters (numerically where numeric). */
export function orderedVariants(experiment: ResolvedExperiment): ResolvedExperiment['variants'] {
  const byParams = (a: ResolvedExperiment['variants'][number], b: ResolvedExperiment['variants'][number]): number => {
    for (const name of Object.keys(a.params)) {
      const [x, y] = [a.params[name], b.params[name]];
      if (x === y || y === undefined) continue;
      const [nx, ny] = [Number(x), Number(y)];
      return Number.isFinite(nx) && Number.isFinite(ny) ? nx - ny : String(x).localeCompare(String(y));
    }
    return 0;
  };
  const plain = experiment.variants.filter((variant) => Object.keys(variant.params).length === 0);
  const grid = experiment.variants.filter((variant) => Object.keys(variant.params).length > 0);
  return [...plain, ...[...grid].sort(byParams)];
}

/** True when any trial reported speculative-decoding figures: only then is the view worth printing. */
export function hasSpecFigures(trials: readonly TrialRecord[]): boolean {
  return trials.some((trial) => trial.metrics.acceptanceRate !== undefined || trial.metrics.meanAcceptedLength !== undefined);
}
