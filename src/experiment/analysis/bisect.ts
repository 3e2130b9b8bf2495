import { median } from 'simple-statistics';
import type { BisectSetupRecord } from '../../store/bisect.js';
import type { TrialRecord } from '../../store/types.js';
import { runDurationMs } from '../../util/format.js';
import { metricValue } from '../spec/metrics.js';
import type { MetricName } from '../spec/types.js';
import { aliasChains, MAX_FACTORS, screeningRows } from './bisect-design.js';
import { type Contrast, contrast, fitTerms, type LinearFit, ratioContrast } from './bisect-fit.js';

/**
 * `servelab bisect`'s search and answer (pure): which of the settable differences between a reference (good) and a
 * current (slow) configuration account for the change in the metric.
 *
 * Every configuration is the current one with a subset of the differences restored to the reference values. A
 * round is a two-level screening design (bisect-design.ts) over its factors: each setting alone when there are at
 * most eight, else groups of them (the halves, quarters, … of the sorted list). All rounds' trials are fitted at
 * once (bisect-fit.ts): log(metric) = a level per block + one coefficient per term, a term being the settings no
 * configuration so far has separated (one setting, or a group not yet split), so a measured configuration serves
 * every later round. A group that matters (its effect significant and at least the tolerance) is split by the next
 * round's design; one whose effect does not is reported with it and not looked into. A pair's interaction (the
 * design's alias chain of it, Holm over the chains) that matters adds a product term; where the design cannot tell
 * which pair of a chain it is, a round of the chain's pairs (each restored alone and together) decides.
 *
 * Each effect is what restoring the setting alone recovers (its coefficient; with an interaction, the other member
 * left as now); an interaction is what the pair recovers only together; the share explained is the named effects'
 * sum over the model's total, on the log scale, with a delta-method CI.
 */

/** A configuration of a round: which differences it restores, and why it is measured. */
export interface BisectConfig {
  /** Difference names, sorted; empty: the current configuration, all: the reference. */
  members: string[];
  /** screen: a row of a screening design; pair: a pair of an alias chain, restored alone or together. */
  why: 'screen' | 'pair';
}

/** One trial as the search reads it. */
export interface BisectObservation {
  round: number;
  block: number;
  /** The lane it ran on (`lanes:`): each lane's level is its own, as each block's. */
  lane?: number;
  /** The configuration's restored differences. */
  members: readonly string[];
  value: number;
}

export interface BisectState {
  /** The settable differences' names, sorted. */
  differences: readonly string[];
  /** Finished rounds, in order, with their configurations. */
  rounds: ReadonlyArray<{ round: number; configs: readonly BisectConfig[] }>;
  /** The finished rounds' valid trials. */
  observations: readonly BisectObservation[];
  alpha: number;
  tolerance: number;
}

/** An effect as a change of the metric: current / restored − 1 (−0.13: losing it cost 13%), with its CI. */
export interface Effect {
  members: string[];
  change: number;
  changeLow: number | null;
  changeHigh: number | null;
  pValue: number | null;
  /** Significant (p < alpha) and |change| ≥ tolerance. */
  matters: boolean;
}

export interface Interaction {
  members: [string[], string[]];
  /** Restoring both, vs the current configuration. */
  joint: Effect;
  /** What they recover only together (the joint minus the two apart, on the log scale). */
  interaction: Effect;
  /** Each restored alone. */
  apart: [Effect, Effect];
}

export interface BisectAnswer {
  /** The model's reference vs current: what all differences cost. */
  total: Effect;
  /** Single settings whose effect alone matters, largest first. */
  responsible: Effect[];
  interactions: Interaction[];
  /** Settings and groups whose effect is below the tolerance or not significant (a group not looked into). */
  negligible: Effect[];
  /** Groups that matter and were not split yet (the search stopped on its budget). */
  unsplit: Effect[];
  /** Share of the total log change the responsible settings and interactions explain, with its CI; null without a total. */
  explained: { share: number; low: number | null; high: number | null } | null;
}

export interface Resolution {
  /** Configurations of the next round; empty when the search is over. */
  next: BisectConfig[];
  /** Undefined before round 1. */
  answer?: BisectAnswer;
}

export function subsetKey(members: readonly string[]): string {
  return [...members].sort().join('\n');
}

/** Pieces of `members` in their sorted order, as even as possible (earlier pieces take the remainder). */
export function pieces(members: readonly string[], count: number): string[][] {
  const sorted = [...members].sort();
  const n = Math.min(count, sorted.length);
  const out: string[][] = [];
  let start = 0;
  for (let piece = 0; piece < n; piece += 1) {
    const size = Math.floor(sorted.length / n) + (piece < sorted.length % n ? 1 : 0);
    out.push(sorted.slice(start, start + size));
    start += size;
  }
  return out;
}

/** A screening round over factors (each a group restored together): its configurations, duplicates merged. */
export function screeningConfigs(factors: readonly (readonly string[])[]): BisectConfig[] {
  const seen = new Map<string, BisectConfig>();
  for (const row of screeningRows(factors.length)) {
    const members = factors.flatMap((factor, column) => (row[column]! > 0 ? [...factor] : [])).sort();
    if (!seen.has(subsetKey(members))) seen.set(subsetKey(members), { members, why: 'screen' });
  }
  return [...seen.values()];
}

/** Round 1: every setting a factor when they are few enough, else groups of neighbours. */
export function firstRound(differences: readonly string[]): BisectConfig[] {
  const factors = differences.length <= MAX_FACTORS ? differences.map((name) => [name]) : pieces(differences, MAX_FACTORS);
  return screeningConfigs(factors);
}

/** Configurations per round at most (a 16-row design), for the worst-case prediction. */
export function worstCaseRounds(n: number): { rounds: number; configurations: number } {
  if (n <= MAX_FACTORS) return { rounds: 1, configurations: firstRound(Array.from({ length: n }, (_, i) => String(i))).length };
  // Each further round splits the groups that matter; every group mattering, log_8 of the groups' size more rounds.
  const rounds = 1 + Math.ceil(Math.log(n / MAX_FACTORS) / Math.log(2));
  return { rounds, configurations: rounds * 16 };
}

interface Term {
  /** A class of settings no configuration separated (restored together everywhere). */
  members: string[];
}

const restores = (config: readonly string[], members: readonly string[]): boolean => members.every((member) => config.includes(member));

/** Settings no measured configuration separates, as classes (sorted by their first member). */
function classesOf(differences: readonly string[], configs: readonly (readonly string[])[]): Term[] {
  const bySignature = new Map<string, string[]>();
  for (const name of differences) {
    const signature = configs.map((config) => (config.includes(name) ? '1' : '0')).join('');
    bySignature.set(signature, [...(bySignature.get(signature) ?? []), name]);
  }
  return [...bySignature.values()].map((members) => ({ members: members.sort() })).sort((a, b) => (a.members[0]! < b.members[0]! ? -1 : 1));
}

/** The fit of log(metric) on block levels, the classes and the pair products (each pair: two class indices). */
function fitModel(state: BisectState, classes: readonly Term[], pairs: ReadonlyArray<[number, number]>): LinearFit | undefined {
  const blocks = new Map<string, number>();
  const strata: number[] = [];
  const rows: number[][] = [];
  const y: number[] = [];
  for (const observation of state.observations) {
    if (!(observation.value > 0)) continue;
    const key = `${observation.round}:${observation.block}:${observation.lane ?? 0}`;
    if (!blocks.has(key)) blocks.set(key, blocks.size);
    strata.push(blocks.get(key)!);
    const mains = classes.map((term) => (restores(observation.members, term.members) ? 1 : 0));
    rows.push([...mains, ...pairs.map(([a, b]) => mains[a]! * mains[b]!)]);
    y.push(Math.log(observation.value));
  }
  return rows.length === 0 ? undefined : fitTerms({ rows, strata, y });
}

function effectOf(members: string[], estimate: Contrast, state: Pick<BisectState, 'alpha' | 'tolerance'>): Effect {
  // The coefficient is log(restored / current); the change reads from the current side: current / restored − 1.
  const change = Math.expm1(-estimate.estimate);
  const significant = estimate.pValue !== null && estimate.pValue < state.alpha;
  return {
    members,
    change,
    changeLow: estimate.high === null ? null : Math.expm1(-estimate.high),
    changeHigh: estimate.low === null ? null : Math.expm1(-estimate.low),
    pValue: estimate.pValue,
    matters: significant && Math.abs(change) >= state.tolerance,
  };
}

const unit = (length: number, ...indices: number[]): number[] => {
  const weights = new Array<number>(length).fill(0);
  for (const index of indices) weights[index] = 1;
  return weights;
};

/**
 * Interaction chains of a screening round that matter: its own trials, ±1 columns of its factors and of each alias
 * chain, Holm over the chains. Returns each such chain's pairs, as pairs of the round's factors (member lists).
 */
function interactingChains(state: BisectState, round: { round: number; configs: readonly BisectConfig[] }): Array<Array<[string[], string[]]>> {
  const configs = round.configs.map((config) => config.members);
  const varied = state.differences.filter((name) => configs.some((config) => config.includes(name)) && !configs.every((config) => config.includes(name)));
  const factors = classesOf(varied, configs).map((term) => term.members);
  if (factors.length < 2) return [];
  const rowsOf = (members: readonly string[]): number[] => factors.map((factor) => (restores(members, factor) ? 1 : -1));
  const chains = aliasChains(configs.map(rowsOf));
  const observations = state.observations.filter((observation) => observation.round === round.round && observation.value > 0);
  const blocks = new Map<string, number>();
  const strata = observations.map((observation) => {
    const key = `${observation.block}:${observation.lane ?? 0}`;
    if (!blocks.has(key)) blocks.set(key, blocks.size);
    return blocks.get(key)!;
  });
  const rows = observations.map((observation) => {
    const mains = rowsOf(observation.members);
    return [...mains, ...chains.map((chain) => chain.pairs[0]!.reduce((product, column) => product * mains[column]!, 1))];
  });
  const fit = fitTerms({ rows, strata, y: observations.map((observation) => Math.log(observation.value)) });
  if (!fit) return [];
  // A ±1 chain coefficient γ is a quarter of what the pair recovers only together (both restored vs the rest).
  const tested = chains.map((chain, index) => {
    const estimate = contrast(fit, unit(factors.length + chains.length, factors.length + index), state.alpha);
    return { chain, estimate, joint: Math.abs(Math.expm1(-4 * estimate.estimate)) };
  });
  const ordered = [...tested].sort((a, b) => (a.estimate.pValue ?? 1) - (b.estimate.pValue ?? 1));
  const found: Array<Array<[string[], string[]]>> = [];
  for (const [rank, entry] of ordered.entries()) {
    if (entry.estimate.pValue === null || entry.estimate.pValue >= state.alpha / (ordered.length - rank)) break;
    if (entry.joint >= state.tolerance) found.push(entry.chain.pairs.map(([a, b]) => [factors[a]!, factors[b]!]));
  }
  return found;
}

/** The configurations of a pair round: each pair's members restored alone and together, beside the current one. */
function pairConfigs(pairs: ReadonlyArray<[string[], string[]]>): BisectConfig[] {
  const seen = new Map<string, BisectConfig>([['', { members: [], why: 'pair' }]]);
  for (const [a, b] of pairs) {
    for (const members of [a, b, [...a, ...b]]) {
      const sorted = [...members].sort();
      if (!seen.has(subsetKey(sorted))) seen.set(subsetKey(sorted), { members: sorted, why: 'pair' });
    }
  }
  return [...seen.values()];
}

/** What the finished rounds say, and the next round's configurations. */
export function resolve(state: BisectState): Resolution {
  if (state.rounds.length === 0) return { next: firstRound(state.differences) };
  const measured = state.rounds.flatMap((round) => round.configs.map((config) => config.members));
  const classes = classesOf(state.differences, measured);
  const indexOf = (members: readonly string[]): number => classes.findIndex((term) => subsetKey(term.members) === subsetKey(members));
  const mainFit = fitModel(state, classes, []);
  const mains = classes.map((term, index) =>
    mainFit ? effectOf(term.members, contrast(mainFit, unit(classes.length, index), state.alpha), state) : undefined,
  );
  // Groups that matter are split first: their parts may hold the interactions a chain points at.
  const split = classes.filter((term, index) => term.members.length > 1 && mains[index]?.matters);
  let next: BisectConfig[] = [];
  if (split.length > 0) {
    const chosen = split.slice(0, MAX_FACTORS / 2);
    const perGroup = Math.max(2, Math.floor(MAX_FACTORS / chosen.length));
    next = screeningConfigs(chosen.flatMap((term) => pieces(term.members, perGroup)));
  }
  // Interactions: chains of the screening rounds whose pairs are still terms; one pair, or one a pair round measured.
  const pairRounds = state.rounds.filter((round) => round.configs.some((config) => config.why === 'pair'));
  const measuredPair = (a: string[], b: string[]): boolean =>
    [a, b, [...a, ...b]].every((members) => pairRounds.some((round) => round.configs.some((config) => subsetKey(config.members) === subsetKey(members))));
  const pairs: Array<[number, number]> = [];
  const toMeasure: Array<[string[], string[]]> = [];
  for (const round of state.rounds.filter((candidate) => candidate.configs.some((config) => config.why === 'screen'))) {
    for (const chain of interactingChains(state, round)) {
      const live = chain.filter(([a, b]) => indexOf(a) >= 0 && indexOf(b) >= 0);
      if (live.length === 1) pairs.push([indexOf(live[0]![0]), indexOf(live[0]![1])]);
      else if (live.length > 1) {
        for (const [a, b] of live) {
          if (measuredPair(a, b)) pairs.push([indexOf(a), indexOf(b)]);
          else toMeasure.push([a, b]);
        }
      }
    }
  }
  if (next.length === 0 && toMeasure.length > 0) next = pairConfigs(toMeasure);
  const unique = [...new Map(pairs.map(([a, b]) => [`${Math.min(a, b)}:${Math.max(a, b)}`, [Math.min(a, b), Math.max(a, b)] as [number, number]])).values()];
  // The final model: a pair whose interaction does not matter in it is dropped (a chain's other pairs).
  let fit = fitModel(state, classes, unique);
  let kept = unique;
  if (fit && unique.length > 0) {
    const fitted = fit;
    kept = unique.filter(
      (_, index) => effectOf([], contrast(fitted, unit(classes.length + unique.length, classes.length + index), state.alpha), state).matters,
    );
    if (kept.length !== unique.length) fit = fitModel(state, classes, kept);
  }
  if (!fit) return { next };
  return { next, answer: answerOf(state, classes, kept, fit) };
}

function answerOf(state: BisectState, classes: readonly Term[], pairs: ReadonlyArray<[number, number]>, fit: LinearFit): BisectAnswer {
  const width = classes.length + pairs.length;
  const estimate = (weights: number[], members: string[]): Effect => effectOf(members, contrast(fit, weights, state.alpha), state);
  const mains = classes.map((term, index) => estimate(unit(width, index), term.members));
  const interactions: Interaction[] = pairs.map(([a, b], index) => ({
    members: [classes[a]!.members, classes[b]!.members],
    joint: estimate(unit(width, a, b, classes.length + index), [...classes[a]!.members, ...classes[b]!.members].sort()),
    interaction: estimate(unit(width, classes.length + index), [...classes[a]!.members, ...classes[b]!.members].sort()),
    apart: [mains[a]!, mains[b]!],
  }));
  const inPairs = new Set(pairs.flat());
  const responsible = mains.filter((effect, index) => effect.matters && classes[index]!.members.length === 1);
  const unsplit = mains.filter((effect, index) => effect.matters && classes[index]!.members.length > 1);
  const negligible = mains.filter((effect, index) => !effect.matters && !inPairs.has(index));
  // Named: the responsible settings and each interacting pair whole (its members alone and together).
  const named = new Array<number>(width).fill(0);
  mains.forEach((effect, index) => {
    if ((effect.matters && classes[index]!.members.length === 1) || inPairs.has(index)) named[index] = 1;
  });
  pairs.forEach((_, index) => {
    named[classes.length + index] = 1;
  });
  const all = new Array<number>(width).fill(1);
  const total = estimate(all, [...state.differences]);
  const share = named.some((weight) => weight > 0) && total.change !== 0 ? ratioContrast(fit, named, all, state.alpha) : undefined;
  return {
    total,
    responsible: responsible.sort((a, b) => Math.abs(Math.log1p(b.change)) - Math.abs(Math.log1p(a.change))),
    interactions,
    negligible,
    unsplit,
    explained: share && Number.isFinite(share.estimate) ? { share: share.estimate, low: share.low, high: share.high } : null,
  };
}

/** One round as the views read it: its run, the configurations it measured and the trials. */
export interface BisectRoundData {
  round: number;
  runId: number;
  status: string;
  /** The round's plan was blocked (a server start per configuration and pass). */
  blocked: boolean;
  startedAt: string;
  finishedAt?: string;
  configs: BisectConfig[];
  trials: readonly TrialRecord[];
}

export interface BisectView {
  setup: BisectSetupRecord;
  /** Undefined before round 1 measured anything. */
  answer?: BisectAnswer;
  /** The next round's configurations (empty when the search is over). */
  next: BisectConfig[];
  /** Medians of the current and the reference configuration where a round measured both (the metric's unit). */
  medians?: { current: number; reference: number };
  rounds: Array<{ round: number; runId: number; status: string; configurations: number; trials: number }>;
  cost: {
    trials: number;
    gpuHours: number;
    /** Server starts the rounds made (a change of configuration in the order the trials ran, per lane). */
    starts: number;
    /**
     * Each difference restored alone beside the current and the reference configuration (n + 2 configurations),
     * costed at this bisect's measured time per server start and per trial: with `setup.trials` per arm, and with
     * the trials per arm that give each effect the precision round 1 gave it here (`samePrecision.perArm`).
     */
    oneAtATime: OneAtATimeCost;
    samePrecision: OneAtATimeCost & { perArm: number };
  };
}

export interface OneAtATimeCost {
  trials: number;
  gpuHours: number | undefined;
}

/** The two configurations every screening design holds; `current` is the baseline of each round's run. */
export const CURRENT_VARIANT = 'current';
export const REFERENCE_VARIANT = 'reference';

/** A configuration's variant name: `current`, `reference`, or `restore NCCL_ALGO+NCCL_PROTO`. */
export function configVariantName(members: readonly string[], all: readonly string[]): string {
  if (members.length === 0) return CURRENT_VARIANT;
  if (members.length === all.length) return REFERENCE_VARIANT;
  return `restore ${[...members].sort().join('+')}`;
}

/** The state the search reads from stored rounds: finished rounds only (a partial one is shown, not used). */
export function bisectState(setup: BisectSetupRecord, rounds: readonly BisectRoundData[]): BisectState {
  const all = setup.differences.map((difference) => difference.name).sort();
  const finished = rounds.filter((round) => round.status === 'done');
  // One observation per server start (a configuration's trials in one block and lane): trials of one start share its
  // moment of the machine, so they are not independent replicates; their median keeps one slow trial of a busy host out.
  const starts = new Map<string, { round: number; block: number; lane?: number; members: string[]; values: number[] }>();
  for (const round of finished) {
    const byVariant = new Map(round.configs.map((config) => [configVariantName(config.members, all), config.members]));
    for (const trial of round.trials) {
      const members = byVariant.get(trial.variant);
      const value = metricValue(trial.metrics, setup.metric as MetricName);
      if (!members || trial.workload !== setup.workload || !Number.isFinite(value)) continue;
      const key = `${round.round}:${trial.block}:${trial.lane ?? 0}:${trial.variant}`;
      const start = starts.get(key) ?? { round: round.round, block: trial.block, ...(trial.lane !== undefined && { lane: trial.lane }), members, values: [] };
      start.values.push(value);
      starts.set(key, start);
    }
  }
  const observations = [...starts.values()].map(({ values, ...start }) => ({ ...start, value: median(values) }));
  return {
    differences: all,
    rounds: finished.map((round) => ({ round: round.round, configs: round.configs })),
    observations,
    alpha: setup.alpha,
    tolerance: setup.tolerance,
  };
}

/** Trials per configuration of a round of `configurations`: each effect as precise as one at a time with `trials` per arm, 2 at least. */
export function trialsPerConfig(trials: number, configurations: number): number {
  return Math.max(2, Math.ceil((2 * trials) / configurations));
}

/** The answer and its cost from the stored rounds. */
export function bisectView(setup: BisectSetupRecord, rounds: readonly BisectRoundData[]): BisectView {
  const state = bisectState(setup, rounds);
  const { next, answer } = resolve(state);
  const all = state.differences;
  let medians: BisectView['medians'];
  for (const round of rounds.filter((candidate) => candidate.status === 'done')) {
    const valuesOf = (name: string): number[] =>
      state.observations.filter((observation) => observation.round === round.round && configVariantName(observation.members, all) === name).map((o) => o.value);
    const current = valuesOf(CURRENT_VARIANT);
    const reference = valuesOf(REFERENCE_VARIANT);
    if (current.length > 0 && reference.length > 0) medians = { current: median(current), reference: median(reference) };
  }
  const measured = rounds.filter((round) => round.trials.length > 0);
  const trials = measured.reduce((sum, round) => sum + round.trials.length, 0);
  const wallMs = measured.reduce((sum, round) => sum + runDurationMs(round.startedAt, round.finishedAt), 0);
  const gpuHours = (wallMs / 3_600_000) * setup.gpusPerServer;
  // Server starts and trial time measured, the rest of the wall time per start: one at a time costed the same way.
  const trialMs = measured.flatMap((round) => round.trials.map((trial) => runDurationMs(trial.startedAt, trial.finishedAt)));
  const starts = measured.reduce((sum, round) => sum + startsOf(round.trials), 0);
  const perTrialMs = trialMs.length > 0 ? trialMs.reduce((sum, ms) => sum + ms, 0) / trialMs.length : 0;
  const perStartMs = starts > 0 ? Math.max(0, wallMs - perTrialMs * trials) / starts : 0;
  const oneAtATime = (perArm: number): OneAtATimeCost => {
    const configurations = all.length + 2;
    const oneTrials = configurations * perArm;
    const oneStarts = measured[0]?.blocked ? configurations * Math.min(setup.passes ?? 1, perArm) : oneTrials;
    const oneGpuHours = trials > 0 ? ((oneStarts * perStartMs + oneTrials * perTrialMs) / 3_600_000) * setup.gpusPerServer : undefined;
    return { trials: oneTrials, gpuHours: oneGpuHours };
  };
  // A design of N trials estimates each effect with variance 4σ²/N; one at a time, t vs t trials, 2σ²/t: t = N / 2.
  const perArm = Math.max(1, Math.floor((rounds.find((round) => round.status === 'done')?.trials.length ?? 0) / 2));
  return {
    setup,
    ...(answer && { answer }),
    next,
    ...(medians && { medians }),
    rounds: rounds.map((round) => ({
      round: round.round,
      runId: round.runId,
      status: round.status,
      configurations: round.configs.length,
      trials: round.trials.length,
    })),
    cost: { trials, gpuHours, starts, oneAtATime: oneAtATime(setup.trials), samePrecision: { ...oneAtATime(perArm), perArm } },
  };
}

/** Server starts of a run's trials: one per change of server configuration in the order they ran, per lane. */
function startsOf(trials: readonly TrialRecord[]): number {
  const ordered = [...trials].sort((a, b) => (a.startedAt < b.startedAt ? -1 : a.startedAt > b.startedAt ? 1 : 0));
  const lastOfLane = new Map<number, string>();
  let starts = 0;
  for (const trial of ordered) {
    const lane = trial.lane ?? 0;
    if (lastOfLane.get(lane) !== trial.serverKey) starts += 1;
    lastOfLane.set(lane, trial.serverKey);
  }
  return starts;
}
