import { median } from 'simple-statistics';
import type { BisectSetupRecord } from '../../store/bisect.js';
import type { TrialRecord } from '../../store/types.js';
import { runDurationMs } from '../../util/format.js';
import { metricValue } from '../spec/metrics.js';
import type { MetricName } from '../spec/types.js';
import type { BlockedValue } from './stats.js';
import { compareSamples } from './verdict.js';

/**
 * `servelab bisect`'s search and answer (pure): which of the settable differences between a reference (good) and a
 * current (slow) configuration account for the change in the metric, by halving.
 *
 * Direction: every tested subset is the *current* configuration with that subset restored to the reference values.
 * The machine is in the current state and the fix is applied to it, so each effect reads as what restoring that
 * subset recovers, and an interaction as a pair that recovers its effect only when restored together.
 *
 * The search: a subset's effect is its change vs the current configuration (rank test and bootstrap CI, in the same
 * round, on the same machine). A subset *matters* when that change is significant and at least the tolerance. A
 * subset that matters is split in halves for the next round; one that does not is not looked into (its members are
 * reported together, with its effect). A single difference that matters is responsible. A subset that matters while
 * neither half does holds an interaction: a pair is one; a larger subset is tested without each member in turn, and
 * the members it cannot do without are the interacting ones.
 */

/** One subset's measured change vs the current configuration. */
export interface SubsetResult {
  /** Difference names, sorted. */
  members: string[];
  /** Change of the metric the subset caused, current vs restored (−0.13: the subset cost 13%); null without data. */
  change: number | null;
  /** CI of `change` at 1 − alpha. */
  changeLow: number | null;
  changeHigh: number | null;
  pValue: number | null;
  /** Significant (p < alpha and the CI excludes no change) and |change| ≥ tolerance. */
  matters: boolean;
  /** Which round measured it (1-based). */
  round: number;
}

/** Why a subset is tested: a half of a subset that mattered, or a subset without one member (an interaction). */
export interface SubsetTest {
  members: string[];
  why: 'half' | 'without';
}

/**
 * responsible: one setting that matters alone; interaction: settings that matter only together (the parts apart
 * fall short of the whole); together: a subset that matters whose halves are each too small to resolve apart (their
 * effects add up to it: more trials would separate them); negligible: a subset below the tolerance.
 */
export type Finding =
  | { kind: 'responsible'; result: SubsetResult }
  | { kind: 'interaction' | 'together'; members: string[]; result: SubsetResult; parts: SubsetResult[] }
  | { kind: 'negligible'; result: SubsetResult };

/** Whether the parts' changes, added on a log scale, lie outside the whole's CI on the side of no change. */
function fallsShort(whole: SubsetResult, parts: readonly SubsetResult[]): boolean {
  if (whole.change === null || whole.changeLow === null || whole.changeHigh === null || parts.some((part) => part.change === null)) return false;
  const sum = Math.expm1(parts.reduce((total, part) => total + Math.log1p(part.change!), 0));
  return whole.change < 0 ? sum > whole.changeHigh : sum < whole.changeLow;
}

export interface BisectState {
  /** The settable differences' names, sorted. */
  differences: readonly string[];
  /** Every subset measured so far (the full set is the reference configuration), in round order. */
  results: readonly SubsetResult[];
}

export interface Resolution {
  /** Subsets to measure in the next round; empty when the search is over. */
  next: SubsetTest[];
  findings: Finding[];
}

export function subsetKey(members: readonly string[]): string {
  return [...members].sort().join('\n');
}

/** Halves of a subset in its sorted order: the first half has the extra member. */
export function halves(members: readonly string[]): [string[], string[]] {
  const sorted = [...members].sort();
  const cut = Math.ceil(sorted.length / 2);
  return [sorted.slice(0, cut), sorted.slice(cut)];
}

/**
 * What the measurements so far say, and which subsets the next round must measure. Before any round the full set is
 * taken to matter, so round 1 measures its halves beside the reference and the current configuration.
 */
export function resolve(state: BisectState): Resolution {
  // A subset's first measurement decides: the total is measured again each round, and a later round's noise must not
  // undo a split already made.
  const latest = new Map<string, SubsetResult>();
  for (const result of state.results) if (!latest.has(subsetKey(result.members))) latest.set(subsetKey(result.members), result);
  const next = new Map<string, SubsetTest>();
  const findings: Finding[] = [];
  const need = (members: string[], why: SubsetTest['why']): void => {
    const key = subsetKey(members);
    if (!latest.has(key) && !next.has(key)) next.set(key, { members: [...members].sort(), why });
  };
  const visit = (members: string[], result: SubsetResult | undefined): void => {
    if (result && !result.matters) {
      findings.push({ kind: 'negligible', result });
      return;
    }
    if (members.length === 1) {
      if (result) findings.push({ kind: 'responsible', result });
      return;
    }
    const [first, second] = halves(members);
    const a = latest.get(subsetKey(first));
    const b = latest.get(subsetKey(second));
    if (!a || !b) {
      need(first, 'half');
      need(second, 'half');
      return;
    }
    if (a.matters || b.matters || !result) {
      visit(first, a);
      visit(second, b);
      return;
    }
    // The subset matters, neither half does. Only when the halves' effects together fall short of the subset's CI is
    // that an interaction; otherwise the halves are just too small to resolve apart at this precision.
    if (!fallsShort(result, [a, b])) {
      findings.push({ kind: 'together', members, result, parts: [a, b] });
      return;
    }
    if (members.length === 2) {
      findings.push({ kind: 'interaction', members, result, parts: [a, b] });
      return;
    }
    const without = members.map((member) => members.filter((other) => other !== member));
    const tested = without.map((subset) => latest.get(subsetKey(subset)));
    if (tested.some((entry) => entry === undefined)) {
      for (const subset of without) need(subset, 'without');
      return;
    }
    // Members the subset cannot do without; none (each of several suffices): all of them, reported together.
    const essential = members.filter((_, index) => !tested[index]!.matters);
    findings.push({ kind: 'interaction', members: essential.length > 0 ? essential : members, result, parts: [a, b] });
  };
  visit([...state.differences], latest.get(subsetKey(state.differences)));
  return { next: [...next.values()], findings };
}

/** The answer: findings, the total change, the share the responsible ones explain, and what it cost. */
export interface BisectAnswer {
  /** The reference vs the current configuration, from the latest round (change = what all differences cost). */
  total: SubsetResult;
  responsible: Array<{ name: string; result: SubsetResult }>;
  interactions: Array<{ members: string[]; result: SubsetResult; parts: SubsetResult[] }>;
  /** Subsets that matter whose members were too small to resolve apart (named together, in the fix). */
  together: Array<{ members: string[]; result: SubsetResult; parts: SubsetResult[] }>;
  negligible: SubsetResult[];
  /**
   * Share of the total change (on a log scale, so shares of multiplicative effects add up) that the responsible
   * settings and interactions explain; null when the total has no direction.
   */
  explained: number | null;
  /** Subsets the search still had to measure when it stopped (budget): empty when complete. */
  unresolved: SubsetTest[];
}

export function bisectAnswer(state: BisectState, total: SubsetResult): BisectAnswer {
  const { findings, next } = resolve(state);
  const responsible = findings.flatMap((finding) => (finding.kind === 'responsible' ? [{ name: finding.result.members[0]!, result: finding.result }] : []));
  const interactions = findings.flatMap((finding) =>
    finding.kind === 'interaction' ? [{ members: finding.members, result: finding.result, parts: finding.parts }] : [],
  );
  const together = findings.flatMap((finding) =>
    finding.kind === 'together' ? [{ members: finding.members, result: finding.result, parts: finding.parts }] : [],
  );
  const negligible = findings.flatMap((finding) =>
    finding.kind === 'negligible' && finding.result.members.length < state.differences.length ? [finding.result] : [],
  );
  const logOf = (change: number | null): number => (change === null ? Number.NaN : Math.log1p(change));
  const totalLog = logOf(total.change);
  const parts = [...responsible.map((entry) => entry.result), ...interactions.map((entry) => entry.result), ...together.map((entry) => entry.result)];
  const explained = Number.isFinite(totalLog) && totalLog !== 0 ? parts.reduce((sum, result) => sum + logOf(result.change), 0) / totalLog : null;
  return {
    total,
    responsible: responsible.sort((a, b) => Math.abs(b.result.change ?? 0) - Math.abs(a.result.change ?? 0)),
    interactions,
    together,
    negligible,
    explained: explained !== null && Number.isFinite(explained) ? explained : null,
    unresolved: next,
  };
}

/**
 * Rounds and subset tests the search needs at most for `n` differences when every half it tests matters: a full
 * halving tree (2(n − 1) subsets over ⌈log2 n⌉ rounds). An interaction adds up to its subset's size in tests.
 */
export function worstCaseTests(n: number): { rounds: number; tests: number } {
  if (n <= 1) return { rounds: 1, tests: 0 };
  return { rounds: Math.ceil(Math.log2(n)), tests: 2 * (n - 1) };
}

/**
 * A subset's result from its round's trials: the current configuration (`current`) vs the one with the subset
 * restored (`restored`), with the rank test and bootstrap CI of every verdict (verdict.ts; within passes when the
 * round was blocked). The change is read from
 * the restored side: current / restored − 1, what the subset cost.
 */
export function subsetResult(
  current: readonly BlockedValue[],
  restored: readonly BlockedValue[],
  members: readonly string[],
  round: number,
  options: { alpha: number; seed: number; tolerance: number; blocked: boolean },
): SubsetResult {
  const verdict = compareSamples(current, restored, { alpha: options.alpha, minEffect: 0, seed: options.seed, higherIsBetter: true, blocked: options.blocked });
  const invert = (ratio: number | null): number | null => (ratio === null || !(ratio > 0) ? null : 1 / ratio - 1);
  const change = invert(verdict.ratio);
  const significant = verdict.pValue !== null && verdict.pValue < options.alpha && verdict.ciLow !== null && (verdict.ciLow > 1 || verdict.ciHigh! < 1);
  return {
    members: [...members].sort(),
    change,
    changeLow: invert(verdict.ciHigh),
    changeHigh: invert(verdict.ciLow),
    pValue: verdict.pValue,
    matters: significant && change !== null && Math.abs(change) >= options.tolerance,
    round,
  };
}

/** One round as the views read it: its run, the subsets it tested and the trials it measured. */
export interface BisectRoundData {
  round: number;
  runId: number;
  status: string;
  /** The round's plan was blocked: compared within passes. */
  blocked: boolean;
  startedAt: string;
  finishedAt?: string;
  tests: SubsetTest[];
  trials: readonly TrialRecord[];
}

export interface BisectView {
  setup: BisectSetupRecord;
  /** Undefined before round 1 measured anything. */
  answer?: BisectAnswer;
  /** Every subset measured by a finished round, in round order (the total of each round included): what the search reads. */
  results: SubsetResult[];
  /** Medians of the current and the reference configuration in the latest round (the metric's unit). */
  medians?: { current: number; reference: number };
  rounds: Array<{ round: number; runId: number; status: string; configurations: number; trials: number }>;
  cost: {
    trials: number;
    gpuHours: number;
    /** Each difference restored alone beside the two configurations, as many trials each: what halving is weighed against. */
    oneAtATime: { trials: number; gpuHours: number | undefined };
  };
}

/** The two configurations every round measures beside its subsets; `current` is the baseline of the round's run. */
export const CURRENT_VARIANT = 'current';
export const REFERENCE_VARIANT = 'reference';

/** `restore NCCL_ALGO+NCCL_PROTO`: a subset variant's name says what it restores. */
export function subsetVariantName(members: readonly string[]): string {
  return `restore ${[...members].sort().join('+')}`;
}

/** The answer and its cost from the stored rounds; finished rounds only feed the search (a partial one is shown, not used). */
export function bisectView(setup: BisectSetupRecord, rounds: readonly BisectRoundData[]): BisectView {
  const all = setup.differences.map((difference) => difference.name).sort();
  const results: SubsetResult[] = [];
  let total: SubsetResult | undefined;
  let medians: BisectView['medians'];
  for (const round of rounds) {
    if (round.status !== 'done') continue;
    const valuesOf = (variant: string): BlockedValue[] =>
      round.trials
        .filter((trial) => trial.variant === variant && trial.workload === setup.workload)
        .map((trial) => ({ value: metricValue(trial.metrics, setup.metric as MetricName), block: trial.block }))
        .filter((entry) => Number.isFinite(entry.value));
    const current = valuesOf(CURRENT_VARIANT);
    const options = { alpha: setup.alpha, seed: setup.seed, tolerance: setup.tolerance, blocked: round.blocked };
    total = subsetResult(current, valuesOf(REFERENCE_VARIANT), all, round.round, options);
    results.push(total);
    for (const test of round.tests) results.push(subsetResult(current, valuesOf(subsetVariantName(test.members)), test.members, round.round, options));
    const reference = valuesOf(REFERENCE_VARIANT);
    if (current.length > 0 && reference.length > 0)
      medians = { current: median(current.map((entry) => entry.value)), reference: median(reference.map((entry) => entry.value)) };
  }
  const trials = rounds.reduce((sum, round) => sum + round.trials.length, 0);
  const gpuHours =
    (rounds.reduce((sum, round) => sum + (round.trials.length > 0 ? runDurationMs(round.startedAt, round.finishedAt) : 0), 0) / 3_600_000) *
    setup.gpusPerServer;
  const oneAtATimeTrials = (all.length + 2) * setup.trials;
  return {
    setup,
    results,
    ...(total && { answer: bisectAnswer({ differences: all, results }, total) }),
    ...(medians && { medians }),
    rounds: rounds.map((round) => ({
      round: round.round,
      runId: round.runId,
      status: round.status,
      configurations: round.tests.length + 2,
      trials: round.trials.length,
    })),
    cost: { trials, gpuHours, oneAtATime: { trials: oneAtATimeTrials, gpuHours: trials > 0 ? (gpuHours / trials) * oneAtATimeTrials : undefined } },
  };
}
