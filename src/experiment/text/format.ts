import { median } from 'simple-statistics';
import type { InvalidTrialRow, RunDetail } from '../../store/queries.js';
import type { TrialRecord } from '../../store/types.js';
import { formatBlock, formatChange, formatChangeInterval, formatNumber, formatPValue, formatTrialNumber } from '../../util/format.js';
import type { Conclusion } from '../analysis/conclusion.js';
import { laneName } from '../analysis/lanes.js';
import { measuredOnly } from '../analysis/search.js';
import type { SearchSummary } from '../analysis/search-summary.js';
import { verdictMethod } from '../analysis/verdict.js';
import { workNotes } from '../analysis/work-notes.js';
import { CATEGORY_COLUMNS, type CategoryRow, categoryRows } from '../spec/categories.js';
import { metricUnit, metricValue } from '../spec/metrics.js';
import { sideColumns, sideFigures } from '../spec/side-figures.js';
import { storedExperimentOf } from '../spec/stored.js';
import type { ResolvedExperiment, VariantVerdict } from '../spec/types.js';
import { accuracyCell } from './accuracy-format.js';
import { equivalenceCell } from './equivalence-format.js';
import { searchAnswerText, searchPointTable } from './search-format.js';

/** Plain-text tables for `servelab run`, `ls`, `show` and `diff`. Pure: data in, lines out. */

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((cell, column) => cell.padEnd(widths[column]!))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((width) => '-'.repeat(width))), ...rows.map(line)].join('\n');
}

/**
 * The conclusion's verdicts vs the baseline, each worded as the conclusion words it ("faster, outputs changed"), with
 * its outputs and accuracy columns when the run checked them. `blocked`: the run's schedule is blocked (verdicts
 * within passes), said under the table (verdictMethod).
 */
export function formatVerdicts(
  conclusion: Conclusion,
  blocked: boolean,
  /** The run has several lanes (experiment `lanes:`): verdicts compare within lanes. */
  lanes = false,
): string {
  const { verdicts, equivalence, accuracy } = conclusion;
  // Only a search has none, and no verdicts to print.
  const baseline = conclusion.baseline ?? 'baseline';
  if (verdicts.length === 0) return `only the baseline "${baseline}" was measured: nothing to compare`;
  // A capacity workload is judged on sloCapacity, the others on the experiment's metric: a unit per row then.
  const metrics = [...new Set(verdicts.map((verdict) => verdict.metric))];
  const unit = metrics.length === 1 ? metricUnit(metrics[0]!) : '';
  const figure = (verdict: VariantVerdict, value: number | null): string =>
    metrics.length === 1 || value === null ? formatNumber(value) : `${formatNumber(value)} ${metricUnit(verdict.metric)}`;
  const rows = verdicts.map((verdict) => [
    verdict.variant,
    verdict.workload,
    figure(verdict, verdict.baselineMedian),
    figure(verdict, verdict.candidateMedian),
    formatChange(verdict.ratio),
    formatChangeInterval(verdict.ciLow, verdict.ciHigh),
    verdict.pValue === null ? 'n/a' : formatPValue(verdict.pValue),
    `${verdict.n.baseline}/${verdict.n.candidate}`,
    pairOf(verdict.failedRequests),
    pairOf(verdict.invalidTrials),
    verdict.outcome,
    ...(equivalence ? [equivalenceCell(equivalence, verdict.variant)!] : []),
    ...(accuracy ? [accuracyCell(accuracy, verdict.variant)!] : []),
  ]);
  // Paired columns say which side is which: "n 4/4" alone leaves the reader to guess.
  const header = [
    'variant',
    'workload',
    `${baseline} ${unit}`.trimEnd(),
    `variant ${unit}`.trimEnd(),
    'change',
    'CI of change',
    'p',
    'n (base/var)',
    'failed req (base/var)',
    'invalid trials (base/var)',
    'verdict',
  ];
  const reasons = verdicts.flatMap((verdict) => {
    const reason = insufficientReason(verdict, baseline);
    return reason ? [`${verdict.variant} ${verdict.workload}: insufficient data: ${reason}`] : [];
  });
  return `${table([...header, ...(equivalence ? ['outputs'] : []), ...(accuracy ? ['accuracy'] : [])], rows)}\n(${verdictMethod(blocked, lanes)})${reasons.map((line) => `\n${line}`).join('')}`;
}

/** Why a verdict is "insufficient data", with what to do; undefined for any other verdict. */
function insufficientReason(verdict: VariantVerdict, baseline: string): string | undefined {
  if (verdict.label !== 'insufficient data') return undefined;
  if (verdict.n.baseline === 0 || verdict.n.candidate === 0) {
    return `no valid trial of ${verdict.n.baseline === 0 ? baseline : verdict.variant} to compare; see the invalid trials in \`servelab show\``;
  }
  if (verdict.baselineMedian === 0) {
    const capacity = verdict.metric === 'sloCapacity' ? ': no level of its searches met the SLOs (`servelab show` gives the cause of each)' : '';
    return `${baseline}'s median ${verdict.metric} is 0, so no ratio to it exists${capacity}`;
  }
  if (verdict.n.baseline < 2 || verdict.n.candidate < 2) return 'fewer than 2 valid trials on a side: raise trials';
  return undefined;
}

/** "baseline/variant" counts; "?" for runs finalized before they were recorded. */
function pairOf(counts: { baseline: number; candidate: number } | undefined): string {
  return counts ? `${counts.baseline}/${counts.candidate}` : '?';
}

/** `conclusions`: each done run's conclusion (its verdicts are what the list says), by run id. */
export function formatRunList(runs: readonly RunDetail[], conclusions: ReadonlyMap<number, Conclusion>): string {
  if (runs.length === 0) return 'no runs in this store yet (start one with `servelab run FILE`)';
  const rows = runs.map((run) => {
    const plan = run.plan;
    return [
      String(run.id),
      run.experimentName,
      run.status,
      run.startedAt.replace('T', ' ').slice(0, 19),
      `${run.trialCount}/${plan.trials.length}`,
      summarizeVerdicts(run, conclusions.get(run.id)),
    ];
  });
  return table(['run', 'experiment', 'status', 'started (UTC)', 'trials', 'result'], rows);
}

const RESULT_WIDTH = 100;

function summarizeVerdicts(run: RunDetail, conclusion: Conclusion | undefined): string {
  const text = verdictSummary(run, conclusion);
  return text.length > RESULT_WIDTH ? `${text.slice(0, RESULT_WIDTH - 1)}…` : text;
}

/** Significant verdicts and infeasible configs' ones, as the conclusion words them: "lossy@single-stream faster, outputs changed +171.1%". */
function verdictSummary(run: RunDetail, conclusion: Conclusion | undefined): string {
  if (run.status !== 'done') return run.message ?? '';
  // A search's result is its answer, not verdicts against its first point.
  if (conclusion?.search) return searchAnswerText(conclusion.search);
  const verdicts = conclusion?.verdicts ?? [];
  const notable = verdicts.filter((verdict) => verdict.significant || !verdict.feasible);
  if (notable.length === 0) return verdicts.length === 0 ? '' : 'no significant difference';
  return notable.map((verdict) => `${verdict.variant}@${verdict.workload} ${verdict.outcome} ${formatChange(verdict.ratio)}`).join('; ');
}

/** Median of the metric per variant (rows) and workload (columns); a search has no baseline to mark. */
export function formatMedians(experiment: ResolvedExperiment, trials: readonly TrialRecord[]): string {
  const rows = experiment.variants.map((variant) => [
    variant.name + (variant.name === experiment.baseline && !experiment.search ? ' (baseline)' : ''),
    ...experiment.workloads.map((workload) => {
      const values = trials
        .filter((trial) => trial.variant === variant.name && trial.workload === workload.label)
        .map((trial) => metricValue(trial.metrics, experiment.metric))
        .filter((value) => Number.isFinite(value));
      return values.length === 0 ? '-' : `${formatNumber(median(values))} (n=${values.length})`;
    }),
  ]);
  return table(['variant', ...experiment.workloads.map((workload) => workload.label)], rows);
}

/** Medians per variant and workload of the side figures (cache hits, power, energy, cost); undefined when no trial has one. */
function formatSideFigures(experiment: ResolvedExperiment, trials: readonly TrialRecord[]): string | undefined {
  const rows = experiment.variants.flatMap((variant) =>
    experiment.workloads.map((workload) => ({
      variant: variant.name,
      workload: workload.label,
      side: sideFigures(trials.filter((trial) => trial.variant === variant.name && trial.workload === workload.label)),
    })),
  );
  const columns = sideColumns(rows);
  if (columns.length === 0) return undefined;
  return table(
    ['variant', 'workload', ...columns.map((column) => column.title)],
    rows.map((row) => [row.variant, row.workload, ...columns.map((column) => column.cell(row))]),
  );
}

/** Trials that were measured but not counted, with their causes; empty when there were none. */
export function formatInvalidTrials(invalid: readonly InvalidTrialRow[]): string[] {
  if (invalid.length === 0) return [];
  return [
    `invalid trials: ${invalid.length} (not counted; each was measured again)`,
    table(
      ['variant', 'workload', 'block', 'attempt', 'ok', 'failed', 'cause'],
      invalid.map((row) => [row.variant, row.workload, formatBlock(row.block), String(row.attempt + 1), String(row.completed), String(row.failed), row.reason]),
    ),
  ];
}

export function formatRunShow(
  run: RunDetail,
  trials: readonly TrialRecord[],
  invalid: readonly InvalidTrialRow[] = [],
  unplannedRestarts = 0,
  conclusion?: Conclusion,
): string {
  // A search's unmeasured points are its space: no rows of them (the search summary counts them).
  const stored = storedExperimentOf(run);
  const experiment = measuredOnly(stored, trials);
  const plan = run.plan;
  const serverCount = new Set(plan.trials.map((trial) => trial.serverKey)).size;
  const unit = metricUnit(experiment.metric);
  // Which lane measured each trial, on a run with lanes.
  const laned = trials.some((trial) => trial.lane !== undefined);
  const lines = [
    `run ${run.id} of ${experiment.name} (${run.filePath})`,
    `status: ${run.status}${run.message ? ` — ${run.message}` : ''}`,
    `started ${run.startedAt}${run.finishedAt ? `, finished ${run.finishedAt}` : ''}; servelab ${run.servelabVersion}${run.gitSha ? ` (${run.gitSha})` : ''}`,
    (stored.search
      ? `plan: ${plan.trials.length} trials = ${experiment.variants.length} measured points (of ${stored.variants.length} in the search's space) at ${experiment.workloads.length} workloads in ${plan.blocks} blocks; `
      : `plan: ${plan.trials.length} trials = ${experiment.variants.length} variants × ${experiment.workloads.length} workloads × ${experiment.trials} repetitions in ${plan.blocks} blocks; `) +
      `${serverCount} server configs, ${plan.restarts} restarts${unplannedRestarts > 0 ? ` (+${unplannedRestarts} after a server died)` : ''}; seed ${plan.seed}`,
    // A search has no baseline: its first point is no reference (its conclusion is the search's answer).
    `metric: ${experiment.metric} (${unit})${conclusion?.search ? `; the search ${conclusion.search.objective.direction}s ${conclusion.search.objective.metric}` : `; baseline: ${experiment.baseline}`}`,
    `prefix cache: ${cacheSummary(trials)}`,
    `output-token counts from: ${tokenCountSources(trials)}`,
    ...withHeading('work notes:', workNotes(trials, experiment.metric)),
    '',
    'trials:',
    table(
      ['trial', 'block', 'variant', 'workload', ...(laned ? ['lane'] : []), unit, 'ok', 'failed', 'finished'],
      plan.trials.map((planned) => {
        const trial = trials.find(
          (candidate) =>
            candidate.variant === planned.variant &&
            candidate.workload === planned.workload &&
            candidate.block === planned.block &&
            candidate.repetition === planned.repetition,
        );
        return [
          formatTrialNumber(planned.index + 1, plan.trials.length),
          formatBlock(planned.block),
          planned.variant,
          planned.workload,
          ...(laned ? [trial?.lane === undefined ? '-' : laneName(experiment, trial.lane)] : []),
          trial ? formatNumber(metricValue(trial.metrics, experiment.metric)) : '-',
          trial ? String(trial.metrics.completed) : '-',
          trial ? String(trial.metrics.failed) : '-',
          trial ? trial.finishedAt.replace('T', ' ').slice(0, 19) : 'pending',
        ];
      }),
    ),
    ...(invalid.length > 0 ? ['', ...formatInvalidTrials(invalid)] : []),
    '',
    `median ${experiment.metric} (${unit}):`,
    formatMedians(experiment, trials),
  ];
  const side = formatSideFigures(experiment, trials);
  if (side) lines.push('', 'prefix-cache hits (as the server reported them), GPU power, energy and cost (medians over trials):', side);
  const categories = categoryRows(trials);
  if (categories.length > 0) lines.push('', 'per category (medians over trials):', formatCategoryRows(categories));
  if (conclusion?.search) lines.push('', ...formatSearchPoints(conclusion.search));
  else if (run.verdicts !== undefined && conclusion)
    lines.push('', 'verdicts vs baseline:', formatVerdicts(conclusion, run.plan.schedule === 'blocked', (experiment.lanes?.length ?? 1) > 1));
  return lines.join('\n');
}

/** A search run's decisions per point (search-format.ts searchPointTable) in place of verdicts, in `show` and run's final text. */
export function formatSearchPoints(summary: SearchSummary): string[] {
  const points = searchPointTable(summary);
  return ['search decisions per point (the answer first):', table(points.header, points.rows), ...points.notes.map((note) => `(${note})`)];
}

/** The sources the trials' token figures used: "server-usage", "stream-chunks (usage disagreed)", … */
function tokenCountSources(trials: readonly TrialRecord[]): string {
  const sources = new Set(trials.map((trial) => trial.metrics.tokenCounts?.method ?? 'not recorded'));
  return sources.size === 0 ? '-' : [...sources].join(', ');
}

function withHeading(heading: string, lines: readonly string[]): string[] {
  return lines.length === 0 ? [] : ['', heading, ...lines.map((line) => `  ${line}`)];
}

/** How the run's trials met the prefix cache, salts left out: "cold (a prompt salt per trial)", "warm", … */
function cacheSummary(trials: readonly TrialRecord[]): string {
  const modes = new Set(trials.map((trial) => (trial.cache ?? 'not recorded').replace(/^cold \(salt \d+\)$/, 'cold (a prompt salt per trial)')));
  return modes.size === 0 ? '-' : [...modes].join(', ');
}

export function formatCategoryRows(rows: readonly CategoryRow[]): string {
  return table(
    CATEGORY_COLUMNS.map((column) => column.title),
    rows.map((row) => CATEGORY_COLUMNS.map((column) => column.cell(row))),
  );
}
