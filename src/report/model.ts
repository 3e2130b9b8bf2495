/**
 * What a run report says, computed from stored rows: verdict table, chart data, environment summary, notes (on
 * what was counted, work notes, drift notes).
 * Pure (no I/O): the HTML report, the Markdown summary and `servelab ui` all render this one model.
 */

import { median } from 'simple-statistics';
import type { ConcludedVerdict, Conclusion } from '../experiment/analysis/conclusion.js';
import { laneName } from '../experiment/analysis/lanes.js';
import { measuredOnly } from '../experiment/analysis/search.js';
import { answerLeader, type SearchSummary } from '../experiment/analysis/search-summary.js';
import { verdictMethod } from '../experiment/analysis/verdict.js';
import { computeVerdicts } from '../experiment/analysis/verdicts.js';
import { workNotes } from '../experiment/analysis/work-notes.js';
import { type CategoryRow, categoryRows } from '../experiment/spec/categories.js';
import { metricUnit, metricValue } from '../experiment/spec/metrics.js';
import { type SideFigures, sideFigures } from '../experiment/spec/side-figures.js';
import { storedExperimentOf, storedVerdictsOf } from '../experiment/spec/stored.js';
import { type TrialSlot, trialNumbers } from '../experiment/spec/trial-number.js';
import type { MetricName, ResolvedExperiment, VariantVerdict } from '../experiment/spec/types.js';
import { diffFingerprints, flattenFingerprint, formatChanges, isVolatileKey } from '../fingerprint/diff.js';
import type { Fingerprint, FingerprintChange } from '../fingerprint/types.js';
import { metricDef } from '../metrics/catalog.js';
import type { DriftAlarmRecord } from '../store/drift-alarms.js';
import type { RunDetail, TrialHealth } from '../store/queries.js';
import type { TrialLatencies } from '../store/reads.js';
import { describeUnreadable, type UnreadableRow } from '../store/row-json.js';
import type { FingerprintRecord, RunStatus, TrialRecord } from '../store/types.js';
import type { TrialTelemetry } from '../telemetry/types.js';
import { formatBlock, formatNumber, formatTrialNumber } from '../util/format.js';
import type { CdfSeries, SpeedupBar, XYSeries } from './charts.js';
import { type MachineTrial, machineTrials } from './machine.js';
import { acceptanceSeries, latencySeries, medianSeries, metricValues, type TrialOrderSeries, trialOrderSeries } from './series.js';

/** Everything stored about one run that a report needs. */
export interface RunData {
  run: RunDetail;
  trials: TrialRecord[];
  fingerprints: Map<number, FingerprintRecord>;
  latencies: Map<number, TrialLatencies>;
  /** Failed requests and invalid trials per (variant, workload); absent: none known. */
  health?: TrialHealth[];
  /** Per-trial machine telemetry; absent or empty for runs recorded without it. */
  telemetry?: Map<number, TrialTelemetry>;
  /** The drift alarms the runner raised, as stored rows; absent: none known. */
  driftAlarms?: DriftAlarmRecord[];
  /** Stored values of this run that could not be read, so were left out of every figure. */
  unreadable?: UnreadableRow[];
  /** The run's conclusion (analysis/conclusion.ts), on the verdicts `runVerdicts` chose; absent: verdicts only. */
  conclusion?: Conclusion;
}

export interface VerdictRow {
  workload: string;
  variant: string;
  isBaseline: boolean;
  trials: number;
  /** The metric its verdict judges (a capacity workload's is sloCapacity, the others the experiment's `metric`). */
  metric: MetricName;
  /** Median of that metric over the trials. */
  median: number | null;
  ratio: number | null;
  ciLow: number | null;
  ciHigh: number | null;
  pValue: number | null;
  significant: boolean;
  label: string;
  /** The verdict as the run's conclusion words it: the label, and for an infeasible config why ("faster, outputs changed"). */
  outcome: string;
  /** False when the conclusion found the config infeasible under the objective (its answers changed, a constraint broke). */
  feasible: boolean;
  /** Failed requests inside the counted trials. */
  failedRequests: number;
  /** Trials measured but not counted (server died, requests failed); each was re-run. */
  invalidTrials: number;
  /** Medians over the counted trials of the figures not every trial has (see SIDE_FIGURES). */
  side: SideFigures;
}

export interface EnvironmentSummary {
  /** Facts shared by every fingerprint of the run. */
  common: Array<{ key: string; value: string }>;
  /** What each variant is compared with, and its words ("the baseline"): for a search, which has none, the point its answer names. */
  reference: { variant: string; label: string };
  /** How each variant's environment differs from the reference's (its args, env…). */
  variants: Array<{ variant: string; changes: FingerprintChange[] }>;
  distinctFingerprints: number;
}

export interface RunReport {
  runId: number;
  experimentName: string;
  description?: string;
  status: RunStatus;
  startedAt: string;
  finishedAt?: string;
  message?: string;
  servelabVersion: string;
  gitSha?: string;
  trialCount: number;
  plannedTrials: number;
  metric: string;
  metricUnit: string;
  /** The variant the verdicts compare with; absent for a search, which has none (its conclusion is the search's answer). */
  baseline?: string;
  /** Confidence level of the intervals (1 − alpha). */
  confidence: number;
  /** The test and CI behind the verdicts (verdictMethod). */
  verdictMethod: string;
  /** False when verdicts were computed here from an unfinished run's trials rather than stored by the runner. */
  verdictsFinal: boolean;
  /** Why the verdicts are not the runner's final ones, worded for the run's status; absent when they are. */
  verdictsNote?: string;
  workloads: string[];
  variants: string[];
  rows: VerdictRow[];
  /** The run's conclusion, when loaded: the best-config section and every verdict row's wording come from it. */
  conclusion?: Conclusion;
  /** Each counted trial at its run-order position, per workload, with the plan's blocks. */
  trialOrder: TrialOrderSeries[];
  /** The stored trials in run order, numbered as every view numbers them. */
  trialRows: TrialRow[];
  throughput: { categories: string[]; series: XYSeries[] };
  /** Median sloCapacity per capacity workload and variant: what those workloads are judged on. */
  capacity: { categories: string[]; series: XYSeries[] };
  latency?: { workload: string; ttft: CdfSeries[]; e2e: CdfSeries[] };
  speedup: SpeedupBar[];
  acceptance?: { parameter: string; series: XYSeries[] };
  /** Per dataset category medians (latency, throughput, acceptance); empty when prompts had no categories. */
  categories: CategoryRow[];
  environment: EnvironmentSummary;
  /** What was counted and what not: values left out, verdicts recomputed or provisional, a failed run, failed requests. */
  notes: string[];
  /** What the trials did that their figures hide (analysis/work-notes.ts). */
  workNotes: string[];
  /** Drift alarms, and a variant's environment changing within the run: empty when every variant kept one. */
  driftNotes: string[];
  machine: MachineTrial[];
}

export interface TrialRow {
  /** "trial 3/20" (formatTrialNumber). */
  number: string;
  /** "block 1" (formatBlock). */
  block: string;
  variant: string;
  workload: string;
  /** The lane that measured it (experiment `lanes:`); absent without lanes. */
  lane?: string;
  value: number;
  completed: number;
  failed: number;
  finishedAt: string;
}

export function buildRunReport(data: RunData): RunReport {
  const { run, trials } = data;
  const experiment = experimentOf(run, trials);
  const metric: MetricName = experiment?.metric ?? 'outputTokensPerSecond';
  const variants = orderedVariants(experiment, trials);
  const workloads = orderedWorkloads(experiment, trials);
  const baseline = experiment?.baseline ?? variants[0] ?? '';
  const planned = run.plan.trials.length;
  const chosen = runVerdicts(run, trials, data.health);
  const verdicts = data.conclusion?.verdicts ?? chosen.verdicts;
  const rows = verdictRows(workloads, variants, baseline, trials, metric, verdicts, data.health ?? []);
  const numberOf = trialNumbers(run.plan);
  const verdictsNote = chosen.final || trials.length === 0 ? undefined : unfinalizedNote(run.status, trials.length, planned);

  return {
    runId: run.id,
    experimentName: run.experimentName,
    ...(experiment?.description !== undefined && { description: experiment.description }),
    status: run.status,
    startedAt: run.startedAt,
    ...(run.finishedAt !== undefined && { finishedAt: run.finishedAt }),
    ...(run.message !== undefined && { message: run.message }),
    servelabVersion: run.servelabVersion,
    ...(run.gitSha !== undefined && { gitSha: run.gitSha }),
    trialCount: trials.length,
    plannedTrials: planned,
    metric,
    metricUnit: metricUnit(metric),
    ...(!experiment?.search && { baseline }),
    confidence: 1 - (experiment?.verdict.alpha ?? 0.05),
    verdictMethod: verdictMethod(run.plan.schedule === 'blocked', (experiment?.lanes?.length ?? 1) > 1),
    verdictsFinal: chosen.final,
    ...(verdictsNote !== undefined && { verdictsNote }),
    workloads,
    variants,
    rows,
    ...(data.conclusion && { conclusion: data.conclusion }),
    trialOrder: trialOrderSeries(workloads, variants, trials, run.plan, numberOf, (workload) => judgedMetric(rows, workload, metric)),
    trialRows: trialRows(trials, numberOf, planned, metric, (lane) => laneName(experiment ?? {}, lane)),
    throughput: medianSeries(workloads, variants, trials, 'outputTokensPerSecond'),
    capacity: medianSeries(
      workloads.filter((workload) => judgedMetric(rows, workload, metric) === 'sloCapacity'),
      variants,
      trials,
      'sloCapacity',
    ),
    ...optional('latency', latencySeries(workloads, variants, data)),
    speedup: rows
      .filter((row) => !row.isBaseline && row.ratio !== null)
      .map((row) => ({
        label: workloads.length > 1 ? `${row.variant} · ${row.workload}` : row.variant,
        ratio: row.ratio!,
        ...(row.ciLow !== null && { ciLow: row.ciLow }),
        ...(row.ciHigh !== null && { ciHigh: row.ciHigh }),
        verdict: row.feasible ? row.label : row.outcome,
      })),
    ...optional('acceptance', acceptanceSeries(workloads, trials)),
    categories: categoryRows(trials),
    environment: environmentSummary(data, variants, environmentReference(experiment, data.conclusion?.search, variants, baseline)),
    notes: [...leftOutNotes(data, metric), ...(chosen.note ? [chosen.note] : []), ...(verdictsNote ? [verdictsNote] : []), ...runNotes(data)],
    workNotes: workNotes(trials, storedExperimentOf(run).metric),
    driftNotes: driftNotes(data),
    machine: machineTrials(trials, data.telemetry ?? new Map(), (trial) => formatTrialNumber(numberOf(trial), planned)),
  };
}

/**
 * The verdicts a view shows, counted on the same trials as its medians: the runner's stored ones when each one's
 * n matches the trials whose metric is a finite number now, else computed here from those trials (a stored row was
 * altered or is unreadable since the run was finalized). `final`: the stored verdicts stand.
 */
export function runVerdicts(
  run: RunDetail,
  trials: readonly TrialRecord[],
  health?: readonly TrialHealth[],
): { verdicts: VariantVerdict[]; final: boolean; note?: string } {
  const experiment = experimentOf(run, trials);
  const stored = storedVerdictsOf(run);
  const compute = (): VariantVerdict[] => (experiment && trials.length > 0 ? computeVerdicts(experiment, trials, health, run.plan.schedule === 'blocked') : []);
  if (stored === undefined) return { verdicts: compute(), final: false };
  if (!experiment) return { verdicts: stored, final: true };
  // Each verdict counted the trials of its own metric (a capacity workload's is sloCapacity).
  const counted = (variant: string, verdict: VariantVerdict): number =>
    metricValues([...trials], variant, verdict.workload, verdict.metric ?? experiment.metric).length;
  const agree = stored.every(
    (verdict) =>
      verdict.n === undefined || (verdict.n.baseline === counted(experiment.baseline, verdict) && verdict.n.candidate === counted(verdict.variant, verdict)),
  );
  if (agree) return { verdicts: stored, final: true };
  return {
    verdicts: compute(),
    final: false,
    note: "The runner's stored verdicts counted other trials than the ones readable now: verdicts recomputed from the trials counted here.",
  };
}

/** Stored values left out of every figure, and trials whose metric is not a number (counted nowhere), by name. */
export function leftOutNotes(data: Pick<RunData, 'trials' | 'unreadable'> & { run: Pick<RunDetail, 'plan'> }, metric: MetricName): string[] {
  const notes = (data.unreadable ?? []).map((row) => `Left out (unreadable): ${describeUnreadable(row)}.`);
  const numberOf = trialNumbers(data.run.plan);
  for (const trial of data.trials) {
    if (Number.isFinite(metricValue(trial.metrics, metric))) continue;
    const number = formatTrialNumber(numberOf(trial), data.run.plan.trials.length);
    notes.push(`${number} (${trial.variant}, ${trial.workload}, ${formatBlock(trial.block)}) has no measured ${metric}: left out of medians, n and verdicts.`);
  }
  return notes;
}

/** Said once, in the verdict table and the notes alike: a stopped run is not "provisional", it will not go on. */
function unfinalizedNote(status: RunStatus, trials: number, planned: number): string {
  return status === 'running'
    ? `Verdicts are provisional: computed from ${trials} of ${planned} planned trials so far.`
    : `Verdicts computed by the report from the ${trials} of ${planned} planned trials stored: the runner did not finalize this ${status} run.`;
}

function trialRows(
  trials: readonly TrialRecord[],
  numberOf: (slot: TrialSlot) => number | undefined,
  planned: number,
  metric: MetricName,
  nameOfLane: (lane: number) => string,
): TrialRow[] {
  return trials
    .map((trial) => ({ trial, position: numberOf(trial) ?? Number.POSITIVE_INFINITY }))
    .sort((a, b) => a.position - b.position || a.trial.id - b.trial.id)
    .map(({ trial, position }) => ({
      number: formatTrialNumber(Number.isFinite(position) ? position : undefined, planned),
      block: formatBlock(trial.block),
      variant: trial.variant,
      workload: trial.workload,
      ...(trial.lane !== undefined && { lane: nameOfLane(trial.lane) }),
      value: metricValue(trial.metrics, metric),
      completed: trial.metrics.completed,
      failed: trial.metrics.failed,
      finishedAt: trial.finishedAt,
    }));
}

export function experimentOf(run: RunDetail, trials?: readonly TrialRecord[]): ResolvedExperiment | undefined {
  const config = storedExperimentOf(run);
  // The store checked names, variants and workloads; verdicts also need the verdict settings. A search's
  // unmeasured points are its space, not rows of the views: given the trials, only its measured points.
  if (!config.verdict) return undefined;
  return trials ? measuredOnly(config, trials) : config;
}

export function orderedVariants(experiment: ResolvedExperiment | undefined, trials: TrialRecord[]): string[] {
  const names = experiment?.variants.map((variant) => variant.name) ?? [];
  return [...new Set([...names, ...trials.map((trial) => trial.variant)])];
}

/** The experiment's order (a sweep is already ascending); otherwise single-stream, then by concurrency. */
export function orderedWorkloads(experiment: ResolvedExperiment | undefined, trials: TrialRecord[]): string[] {
  if (experiment) return [...new Set([...experiment.workloads.map((workload) => workload.label), ...trials.map((trial) => trial.workload)])];
  const concurrency = new Map(trials.map((trial) => [trial.workload, trial.workload === 'single-stream' ? 0 : (trial.concurrency ?? Infinity)]));
  return [...concurrency.keys()].sort((x, y) => concurrency.get(x)! - concurrency.get(y)! || x.localeCompare(y));
}

function verdictRows(
  workloads: string[],
  variants: string[],
  baseline: string,
  trials: TrialRecord[],
  metric: MetricName,
  verdicts: ReadonlyArray<VariantVerdict & Partial<Pick<ConcludedVerdict, 'outcome' | 'feasible'>>>,
  health: readonly TrialHealth[],
): VerdictRow[] {
  const rows: VerdictRow[] = [];
  for (const workload of workloads) {
    // The workload's verdict metric (a capacity workload's is sloCapacity): its medians are of what was compared.
    const judged = verdicts.find((verdict) => verdict.workload === workload)?.metric ?? metric;
    for (const variant of variants) {
      const values = metricValues(trials, variant, workload, judged);
      const isBaseline = variant === baseline;
      const verdict = verdicts.find((candidate) => candidate.variant === variant && candidate.workload === workload);
      const pairHealth = health.find((row) => row.variant === variant && row.workload === workload);
      if (values.length === 0 && !verdict && !pairHealth) continue;
      const label = isBaseline ? 'baseline' : (verdict?.label ?? 'insufficient data');
      rows.push({
        workload,
        variant,
        isBaseline,
        metric: judged,
        trials: values.length,
        median: values.length > 0 ? median(values) : null,
        ratio: isBaseline ? 1 : (verdict?.ratio ?? null),
        ciLow: verdict?.ciLow ?? null,
        ciHigh: verdict?.ciHigh ?? null,
        pValue: verdict?.pValue ?? null,
        significant: verdict?.significant ?? false,
        label,
        outcome: isBaseline ? label : (verdict?.outcome ?? label),
        feasible: verdict?.feasible ?? true,
        failedRequests:
          pairHealth?.failedRequests ??
          trials.filter((trial) => trial.variant === variant && trial.workload === workload).reduce((sum, trial) => sum + trial.metrics.failed, 0),
        invalidTrials: pairHealth?.invalidTrials ?? 0,
        side: sideFigures(trials.filter((trial) => trial.variant === variant && trial.workload === workload)),
      });
    }
  }
  return rows;
}

/** The metric a workload's verdict rows judge; the experiment's metric where the workload has none. */
function judgedMetric(rows: readonly VerdictRow[], workload: string, fallback: MetricName): MetricName {
  return rows.find((row) => row.workload === workload)?.metric ?? fallback;
}

/**
 * The verdict table's median column, headed by the catalogue's header of the metric judged ("median tok/s",
 * "median SLO capacity"); when workloads judge different metrics, each cell carries its unit instead.
 */
export function medianColumn(report: Pick<RunReport, 'rows'>): { title: string; cell: (row: VerdictRow) => string } {
  const metrics = [...new Set(report.rows.map((row) => row.metric))];
  if (metrics.length === 1) return { title: `median ${metricDef(metrics[0]!).header}`, cell: (row) => formatNumber(row.median) };
  return { title: 'median', cell: (row) => (row.median === null ? formatNumber(null) : `${formatNumber(row.median)} ${metricUnit(row.metric)}`) };
}

/** A search has no baseline: its environments are told against the point its answer names (or its first measured one). */
function environmentReference(
  experiment: { search?: unknown } | undefined,
  search: SearchSummary | undefined,
  variants: readonly string[],
  baseline: string,
): EnvironmentSummary['reference'] {
  if (!experiment?.search) return { variant: baseline, label: 'the baseline' };
  const answer = search && answerLeader(search)?.best;
  const variant = answer && variants.includes(answer) ? answer : (variants[0] ?? '');
  return { variant, label: `${variant === answer ? "the search's answer" : 'the first measured point'} ${variant}` };
}

function environmentSummary(data: RunData, variants: string[], reference: EnvironmentSummary['reference']): EnvironmentSummary {
  const baseline = reference.variant;
  const fingerprints = [...new Set(data.trials.map((trial) => trial.fingerprintId))]
    .map((id) => data.fingerprints.get(id)?.fingerprint)
    .filter((fingerprint) => fingerprint !== undefined);
  const flats = fingerprints.map(flattenFingerprint);
  const first = flats[0] ?? {};
  const common = Object.entries(first)
    // Readings of the moment (host load, current clock) are machine state, shown with the telemetry, not the environment.
    .filter(([key, value]) => !isVolatileKey(key) && flats.every((flat) => flat[key] === value))
    .map(([key, value]) => ({ key, value }));
  // On lanes, a variant is compared with the baseline as its lane ran it: a lane's own env is not the variant's.
  const variantChanges = variants
    .filter((variant) => variant !== baseline)
    .flatMap((variant) => {
      const trial = data.trials.find((candidate) => candidate.variant === variant);
      const fingerprint = trial && data.fingerprints.get(trial.fingerprintId)?.fingerprint;
      const reference = representativeFingerprint(data, baseline, true, trial?.lane);
      return fingerprint && reference ? [{ variant, changes: diffFingerprints(reference, fingerprint) }] : [];
    });
  return { common, reference, variants: variantChanges, distinctFingerprints: fingerprints.length };
}

/**
 * The fingerprint of a variant's first trial, on `lane` when it has one there (or of the run's first trial when the
 * variant has none).
 */
export function representativeFingerprint(data: RunData, variant: string | undefined, fallback = true, lane?: number): Fingerprint | undefined {
  const ofVariant = (candidate: TrialRecord) => candidate.variant === variant;
  const trial =
    data.trials.find((candidate) => ofVariant(candidate) && candidate.lane === lane) ?? data.trials.find(ofVariant) ?? (fallback ? data.trials[0] : undefined);
  return trial && data.fingerprints.get(trial.fingerprintId)?.fingerprint;
}

/** A run that ended badly, and failed requests (kept out of latency figures). */
function runNotes({ run, trials }: RunData): string[] {
  const notes: string[] = [];
  if (run.status === 'failed' || run.status === 'interrupted') notes.push(`Run ${run.status}${run.message ? `: ${run.message}` : ''}`);
  const failed = trials.reduce((sum, trial) => sum + (trial.metrics.failed ?? 0), 0);
  if (failed > 0) {
    const affected = trials.filter((trial) => (trial.metrics.failed ?? 0) > 0).length;
    notes.push(`${failed} failed requests in ${affected} of ${trials.length} trials (excluded from latency figures).`);
  }
  return notes;
}

function driftNotes(data: RunData): string[] {
  const { run, trials } = data;
  const numberOf = trialNumbers(run.plan);
  const numberText = (trial: TrialRecord): string => formatTrialNumber(numberOf(trial), run.plan.trials.length);
  const notes: string[] = [];
  if (run.status === 'drift') notes.push(`Drift alarm stopped this run: ${run.message ?? 'no detail recorded'}`);
  // Alarms accepted with --accept-drift leave no trace in the status: the stored rows say the numbers moved.
  for (const alarm of data.driftAlarms ?? []) if (alarm.accepted) notes.push(`Drift alarm accepted with --accept-drift: ${alarm.message}`);
  // The same variant must see the same environment in every trial of a lane; a change mid-run is drift inside the
  // run. Lanes differ by design (their env, GPUs, host): the lane report shows a lane's difference, not this.
  const byVariant = new Map<string, TrialRecord[]>();
  for (const trial of trials) {
    const key = `${trial.variant}\u0000${trial.lane ?? ''}`;
    byVariant.set(key, [...(byVariant.get(key) ?? []), trial]);
  }
  for (const variantTrials of byVariant.values()) {
    const variant = variantTrials[0]!.variant;
    for (let i = 1; i < variantTrials.length; i++) {
      const before = data.fingerprints.get(variantTrials[i - 1]!.fingerprintId)?.fingerprint;
      const after = data.fingerprints.get(variantTrials[i]!.fingerprintId)?.fingerprint;
      if (!before || !after || variantTrials[i - 1]!.fingerprintId === variantTrials[i]!.fingerprintId) continue;
      const changes = diffFingerprints(before, after);
      if (changes.length > 0)
        notes.push(
          `${variant}: environment changed between ${numberText(variantTrials[i - 1]!)} and ${numberText(variantTrials[i]!)}: ${formatChanges(changes)}`,
        );
    }
  }
  return notes;
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
