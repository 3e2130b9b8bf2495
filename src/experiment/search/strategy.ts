/**
 * The search's strategy: after each block, which points to measure next, which need no more measuring, and when
 * the whole search is decided. Pure and deterministic for a seed: everything is recomputed from the observations.
 *
 * 1. First block: a space-filling design over the valid points (design.ts).
 * 2. Per load level, the observations are fitted with point and block effects (level-fit.ts): a block's drift
 *    cancels, and the noise is pooled over all points. Across levels ('*') the same fit runs on each start's mean
 *    log score over the levels (level-fit.ts startMeans): a point's score is the mean of its level scores, i.e. the
 *    geometric mean of its per-level ratios, and a start's own effect, which moves all its levels together, stays
 *    in the noise instead of being averaged away as if the levels were independent.
 * 3. Racing (an indifference zone of `tolerance`, Kim–Nelson style): the leader of a race is its best-estimated
 *    point; another point needs no more measuring once the upper bound of its advantage over the leader (the
 *    difference of their block-adjusted effects, one-sided, Student's t with the pooled degrees of freedom) is
 *    below the tolerance: it cannot beat the leader by more than the tolerance. It is `as good` when the lower
 *    bound is above −tolerance too (so near-ties end early instead of running to a cap), `out` when even the upper
 *    bound is below −tolerance. A point leading one race is raced in the others like any other point. Each bound
 *    is at 1 − α/2 for `confidence` = 1 − α: a point is re-tested against its leader after every block, and the
 *    leader is the best of noisy estimates, so 1 − α per comparison dropped a truly better point far more often
 *    than α (bench/search-cost.ts, 60 seeds: answers within the tolerance in 85% at 1 − α, 93% at 1 − α/2).
 *    A block that races only brings the leaders of the races its contenders are still open in. With a tie-break,
 *    a point it prefers to a race's choice, estimated within the tolerance but not shown `as good`, races on until
 *    it is, or until its bounds are within ±tolerance/2 without showing it (then it is estimated more than half the
 *    tolerance behind: its estimate hovering near −tolerance would otherwise race it, and the leader, without end).
 * 4. Unmeasured points: a Gaussian process per level (gp.ts) over the measured point effects; a point is still
 *    open when its upper bound (mean + z·sd) beats the leader by more than the tolerance at some level or across.
 *    New points are the most promising open ones (highest upper bound over the leader's), picked one at a time
 *    with the ones already picked added at their predicted mean (a "kriging believer"), so a block spreads out.
 * 5. The search ends when no measured point is contending and no unmeasured point is open (resolved), or when
 *    the budget is spent (unresolved: what is still open, in words). A resolved answer whose noisiest level measured
 *    over 1.5× the tolerance per measurement (one start: the mean of its trials there) says that its confidence was
 *    not borne out at such noise (`noiseCaution`).
 */
import { median, probit } from 'simple-statistics';
import { formatGpuTime, formatPercent } from '../../util/format.js';
import { deriveSeed, mulberry32, type Random } from '../../util/random.js';
import { studentQuantile } from '../analysis/drift.js';
import { maximinDesign } from './design.js';
import { encodePoints } from './encode.js';
import { fitGp, type GpModel } from './gp.js';
import { effectDifference, fitLevel, type LevelFit, startMeans } from './level-fit.js';
import {
  type DropStatus,
  pointKey,
  type RaceFigures,
  type SearchObservation,
  type SearchSettings,
  type SearchSpace,
  type SearchState,
  type SearchStep,
} from './types.js';

/** The across-levels race's name in `leaders`. */
export const ACROSS_LEVELS = '*';
export const DEFAULT_NOISE_CV = 0.03;
export const DEFAULT_BLOCK_SIZE = 12;
/** Points of the space-filling first block: the file's, else √(valid points), 4 to 12 (`plan` shows it too). */
export function firstBlockSize(points: number, settings: Pick<SearchSettings, 'initialPoints'>): number {
  return Math.min(points, settings.initialPoints ?? Math.max(4, Math.min(12, Math.round(Math.sqrt(points)))));
}

/** New points a block gets while any are open, however many contenders wait. */
const MIN_NEW_PER_BLOCK = 2;

/** A comparison with the race's leader as the views read it (`detail` words the same numbers). */
type Figures = Required<Pick<RaceFigures, 'versus' | 'estimate' | 'lower' | 'upper' | 'blocks'>>;

type Judgement =
  | { status: 'leader' }
  | { status: 'contending'; detail: string; excess: number; figures?: Figures }
  | { status: DropStatus; detail: string; estimate: number; lower: number; upper: number; figures: Figures };

/** One race: a level, or all levels together. */
interface Race {
  name: string;
  fits: LevelFit[];
  /** Score (higher is better) of every point measured in this race. */
  scores: Map<string, number>;
  leader?: string;
}

interface Context {
  space: SearchSpace;
  settings: SearchSettings;
  keys: string[];
  /** Every point's coordinates (encode.ts), in the space's order. */
  vectors: number[][];
  /** Signed-log tolerance: a point beating the leader by less than this is not worth finding. */
  zone: number;
  /** Confidence of one racing comparison (one-sided): 1 − α/2 for the settings' 1 − α, see the header's point 3. */
  raceConfidence: number;
  quantile: (df: number) => number;
}

export function searchStep(space: SearchSpace, settings: SearchSettings, state: SearchState): SearchStep {
  const keys = space.points.map((point) => pointKey(space, point));
  const sign = settings.direction === 'maximize' ? 1 : -1;
  const raceConfidence = 1 - (1 - settings.confidence) / 2;
  const context: Context = {
    space,
    settings,
    keys,
    vectors: encodePoints(space),
    // maximize: within tolerance = value ≥ best·(1 − tol); minimize: value ≤ best·(1 + tol).
    zone: sign === 1 ? -Math.log(1 - settings.tolerance) : Math.log(1 + settings.tolerance),
    raceConfidence,
    quantile: (df) => studentQuantile(raceConfidence, df),
  };
  const blocks = new Set(state.observations.map((observation) => observation.block));
  const rng = mulberry32(deriveSeed(settings.seed, blocks.size));
  // Only points no step dropped may lead: a leader is measured in every block its races need.
  const dropped = new Set(state.dropped.keys());
  const measurable = keys.filter((key) => !state.dropped.has(key));
  const budgetSpent = settings.budget !== undefined && state.spent >= settings.budget;

  if (measurable.length === 0) {
    return {
      measure: [],
      drop: [],
      leaders: [],
      done: { reason: `no point left to measure: all ${keys.length} were dropped`, resolved: false, unresolved: [] },
    };
  }
  if (state.observations.length === 0) {
    if (budgetSpent) return { measure: [], drop: [], leaders: [], done: budgetDone(context, state, ['no point was measured']) };
    return { measure: firstBlock(context, measurable, rng), drop: [], leaders: [] };
  }

  const levelRaces = settings.levels.map((level) => levelRace(level, state.observations, sign, context, dropped));
  const races = [...levelRaces, acrossRace(state.observations, levelRaces, sign, context, dropped)];
  const measured = new Set(keys.filter((key) => levelRaces.some((race) => race.scores.has(key))));
  const judgements = new Map(keys.filter((key) => measured.has(key)).map((key) => [key, races.map((race) => judge(context, race, key))]));

  const leaders = leadersOf(context, races, judgements);
  const drop: Array<{ point: string; reason: string; status: DropStatus; races: RaceFigures[] }> = [];
  // Each contender with the races it is still open in (whose leaders it must share a block with).
  const contenders: Array<{ key: string; excess: number; races: number[] }> = [];
  for (const key of measurable.filter((key) => measured.has(key))) {
    const verdicts = judgements.get(key)!;
    const open = verdicts.filter((verdict) => verdict.status === 'contending');
    const openRaces = verdicts.flatMap((verdict, index) => (verdict.status === 'contending' ? [index] : []));
    // A race's leader is still raced in the other races it may win: leading one level proves nothing at another.
    if (open.length > 0) contenders.push({ key, excess: Math.max(...open.map((verdict) => verdict.excess)), races: openRaces });
    else if (verdicts.some((verdict) => verdict.status === 'leader')) continue;
    else if (tieBreakWants(context, races, leaders, key, verdicts)) contenders.push({ key, excess: -Infinity, races: races.map((_, index) => index) });
    else drop.push(dropOf(key, races, verdicts));
  }
  contenders.sort((a, b) => b.excess - a.excess || keys.indexOf(a.key) - keys.indexOf(b.key));

  const models = modelsOf(context, levelRaces);
  const unmeasured = measurable.filter((key) => !measured.has(key));
  const openPoints = unmeasured.filter((key) => acquisition(context, races, models, keys.indexOf(key)) > 0);

  if (contenders.length === 0 && openPoints.length === 0) {
    const ended = [...judgements.values()].filter((verdicts) => !verdicts.some((verdict) => verdict.status === 'leader')).length;
    const reason =
      `the leaders are within ${percent(settings.tolerance)} of the best of ${keys.length} points at ${percent(context.raceConfidence)} confidence per comparison: ` +
      `${measured.size} measured (${ended} ruled out by racing), ${unmeasured.length} ruled out by the response model${noiseCaution(context, levelRaces)}`;
    return { measure: [], drop, leaders, done: { reason, resolved: true, unresolved: [] } };
  }
  if (budgetSpent)
    return {
      measure: [],
      drop,
      leaders,
      done: budgetDone(context, state, unresolvedLines(context, races, judgements, contenders, openPoints, models), openOf(races, judgements, contenders)),
    };

  const leaderOf = (index: number): string[] => (races[index]!.leader === undefined ? [] : [races[index]!.leader!]);
  const allLeaders = [...new Set(races.flatMap((_, index) => leaderOf(index)))];
  const cap = Math.max(settings.blockSize ?? DEFAULT_BLOCK_SIZE, allLeaders.length + 1);
  const newSlots = openPoints.length === 0 ? 0 : Math.min(openPoints.length, Math.max(MIN_NEW_PER_BLOCK, cap - allLeaders.length - contenders.length));
  const chosen = new Set<string>();
  if (newSlots > 0) {
    // New points are judged in every race: every leader shares their block.
    for (const key of allLeaders) chosen.add(key);
    for (const entry of contenders.slice(0, Math.max(0, cap - allLeaders.length - newSlots))) chosen.add(entry.key);
    for (const key of propose(context, races, models, openPoints, newSlots)) chosen.add(key);
  } else {
    // Racing only: a contender brings the leaders of the races it is open in, as long as the block has room.
    for (const entry of contenders) {
      const needed = [entry.key, ...entry.races.flatMap(leaderOf)].filter((key) => !chosen.has(key));
      if (chosen.size > 0 && chosen.size + needed.length > cap) continue;
      for (const key of needed) chosen.add(key);
    }
  }
  return { measure: shuffle([...chosen], rng).map((key) => space.points[keys.indexOf(key)]!), drop, leaders };
}

function firstBlock(context: Context, measurable: readonly string[], rng: Random): SearchStep['measure'] {
  const { space, settings, keys } = context;
  const allowed = measurable.map((key) => keys.indexOf(key));
  const { vectors } = context;
  const size = firstBlockSize(space.points.length, settings);
  const valueKeys = allowed.map((index) => space.knobs.map((knob) => `${knob.name}=${space.points[index]![knob.name]}`));
  const design = maximinDesign(
    allowed.map((index) => vectors[index]!),
    size,
    rng,
    valueKeys,
  );
  return design.map((position) => space.points[allowed[position]!]!);
}

function levelRace(level: string, observations: readonly SearchObservation[], sign: 1 | -1, context: Context, dropped: ReadonlySet<string>): Race {
  const fit = fitLevel(
    observations.filter((observation) => observation.level === level),
    sign,
    Math.log1p(context.settings.noiseCv ?? DEFAULT_NOISE_CV),
  );
  const scores = new Map([...fit.effects].map(([key, effect]) => [key, effect.score]));
  return { name: level, fits: [fit], scores, leader: best(scores, dropped, context) };
}

/**
 * All levels together: points measured at every level in one start, fitted on each start's mean log score over the
 * levels (level-fit.ts startMeans), so a point's score is the mean of its level scores and the noise is a start's.
 */
function acrossRace(observations: readonly SearchObservation[], levels: readonly Race[], sign: 1 | -1, context: Context, dropped: ReadonlySet<string>): Race {
  const names = levels.map((race) => race.name);
  const fit = fitLevel(startMeans(observations, names, ACROSS_LEVELS), sign, Math.log1p(context.settings.noiseCv ?? DEFAULT_NOISE_CV));
  const scores = new Map([...fit.effects].map(([key, effect]) => [key, effect.score]));
  const leader = best(scores, dropped, context);
  return { name: ACROSS_LEVELS, fits: [fit], scores, ...(leader !== undefined && { leader }) };
}

/** The best-scored point that may lead: measured, and not dropped by an earlier step or the runner. */
function best(scores: ReadonlyMap<string, number>, dropped: ReadonlySet<string>, context: Context): string | undefined {
  let leader: string | undefined;
  for (const key of context.keys) {
    const score = scores.get(key);
    if (score === undefined || dropped.has(key)) continue;
    if (leader === undefined || score > scores.get(leader)!) leader = key;
  }
  return leader;
}

function judge(context: Context, race: Race, key: string): Judgement {
  if (race.leader === undefined) return { status: 'contending', detail: `${race.name}: no leader yet`, excess: Infinity };
  if (key === race.leader) return { status: 'leader' };
  const difference = effectDifference(race.fits, key, race.leader);
  if (!difference) return { status: 'contending', detail: `${race.name}: not yet measured at every level`, excess: Infinity };
  const df = Math.min(...race.fits.map((fit) => fit.df));
  const half = context.quantile(df) * difference.standardError;
  const lower = difference.estimate - half;
  const upper = difference.estimate + half;
  const detail =
    `${race.name}: ${signedPercent(difference.estimate)} vs ${race.leader} ` +
    `(${percent(context.raceConfidence)} bounds ${signedPercent(lower)}…${signedPercent(upper)}, ${difference.blocks} block${difference.blocks === 1 ? '' : 's'})`;
  const figures: Figures = {
    versus: race.leader,
    estimate: Math.expm1(difference.estimate),
    lower: Math.expm1(lower),
    upper: Math.expm1(upper),
    blocks: difference.blocks,
  };
  if (upper >= context.zone) return { status: 'contending', detail, excess: upper - context.zone, figures };
  const status: DropStatus = lower > -context.zone ? 'as good' : upper < -context.zone ? 'out' : 'not better';
  return { status, detail, estimate: difference.estimate, lower, upper, figures };
}

/**
 * With a tie-break, a point it prefers to a race's current choice, estimated within the tolerance of the leader
 * but not yet shown to be, is raced on until it is shown as good or not, or its bounds are narrower than
 * ±tolerance/2 without showing it: the tie-break can only pick points that are shown as good.
 */
function tieBreakWants(context: Context, races: readonly Race[], leaders: SearchStep['leaders'], key: string, verdicts: readonly Judgement[]): boolean {
  const { tieBreak } = context.settings;
  if (!tieBreak) return false;
  const point = context.space.points[context.keys.indexOf(key)]!;
  return verdicts.some((verdict, index) => {
    if (verdict.status !== 'not better' || verdict.estimate <= -context.zone) return false;
    // Closed once the bounds are within ±tolerance/2 and still do not show it as good: it is then estimated behind
    // the leader by more than half the tolerance, and racing on could go on without end while its estimate hovers
    // near −tolerance (bench/search-cost.ts's model with the example's tie-break: 910 starts at most, 504 with this).
    if (verdict.upper - verdict.estimate < context.zone / 2) return false;
    const preferred = leaders.find((entry) => entry.level === races[index]!.name)?.preferred;
    return preferred !== undefined && tieBreak(point, context.space.points[context.keys.indexOf(preferred)]!) < 0;
  });
}

function dropOf(
  key: string,
  races: readonly Race[],
  verdicts: readonly Judgement[],
): { point: string; reason: string; status: DropStatus; races: RaceFigures[] } {
  const statuses = verdicts.map((verdict) => verdict.status);
  const status: DropStatus = statuses.every((each) => each === 'as good') ? 'as good' : statuses.every((each) => each === 'out') ? 'out' : 'not better';
  const details = verdicts.map((verdict, index) => ('detail' in verdict ? verdict.detail : `${races[index]!.name}: leader`));
  return { point: key, reason: `${status}: ${details.join('; ')}`, status, races: raceFigures(races, verdicts) };
}

/** A point's judgements as data, one per race: what its reason words, for the views to read without parsing it. */
function raceFigures(races: readonly Race[], verdicts: readonly Judgement[]): RaceFigures[] {
  return verdicts.map((verdict, index) => ({
    level: races[index]!.name,
    status: verdict.status === 'contending' ? 'racing' : verdict.status,
    ...('figures' in verdict && verdict.figures),
  }));
}

/** The measured points still undecided when the budget ends the search, with their figures in every race. */
function openOf(races: readonly Race[], judgements: ReadonlyMap<string, Judgement[]>, contenders: ReadonlyArray<{ key: string }>) {
  return contenders.map(({ key }) => ({ point: key, races: raceFigures(races, judgements.get(key)!) }));
}

/** Per level, the response model over the measured point effects (noise σ²/weight each: σ²/blocks at one trial a start). */
function modelsOf(context: Context, levels: readonly Race[]): Array<{ model: GpModel; x: number[][]; y: number[]; noise: number[] } | undefined> {
  const { vectors } = context;
  const prior = Math.log1p(0.1) ** 2;
  return levels.map((race) => {
    const fit = race.fits[0]!;
    const entries = context.keys.flatMap((key, index) => {
      const effect = fit.effects.get(key);
      return effect ? [{ x: vectors[index]!, y: effect.score, noise: fit.sigma ** 2 / effect.weight }] : [];
    });
    if (entries.length === 0) return undefined;
    const x = entries.map((entry) => entry.x);
    const y = entries.map((entry) => entry.y);
    const noise = entries.map((entry) => entry.noise);
    return { model: fitGp(x, y, noise, prior), x, y, noise };
  });
}

type Models = ReturnType<typeof modelsOf>;

/**
 * How far an unmeasured point's upper bound beats the leader's score by more than the tolerance, the most over
 * the races (> 0: open). Across levels the bound is the mean of the per-level bounds against the across leader.
 */
function acquisition(context: Context, races: readonly Race[], models: Models, index: number): number {
  const z = probit(context.settings.confidence);
  const point = context.vectors[index]!;
  const bounds = models.map((entry) => (entry ? entry.model.upperBound(point, z) : Infinity));
  let most = -Infinity;
  bounds.forEach((bound, level) => {
    const race = races[level]!;
    if (race.leader !== undefined) most = Math.max(most, bound - race.scores.get(race.leader)! - context.zone);
    else most = Infinity;
  });
  const across = races.at(-1)!;
  if (across.leader !== undefined) {
    const gaps = bounds.map((bound, level) => bound - races[level]!.scores.get(across.leader!)!);
    most = Math.max(most, gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length - context.zone);
  }
  return most;
}

/** The `count` most promising open points, each picked as if the ones before it were measured at their predicted mean. */
function propose(context: Context, races: readonly Race[], models: Models, open: readonly string[], count: number): string[] {
  const { vectors } = context;
  let current = models;
  const picked: string[] = [];
  while (picked.length < count) {
    let pick: string | undefined;
    let pickValue = 0;
    for (const key of open) {
      if (picked.includes(key)) continue;
      const value = acquisition(context, races, current, context.keys.indexOf(key));
      if (value > pickValue) {
        pick = key;
        pickValue = value;
      }
    }
    if (pick === undefined) break;
    picked.push(pick);
    const x = vectors[context.keys.indexOf(pick)]!;
    current = current.map((entry, level) => {
      if (!entry) return entry;
      const believed = entry.model.predict(x).mean;
      const fit = races[level]!.fits[0]!;
      const next = { x: [...entry.x, x], y: [...entry.y, believed], noise: [...entry.noise, fit.sigma ** 2 / fit.startWeight] };
      return { ...next, model: fitGp(next.x, next.y, next.noise, 0, entry.model.hypers) };
    });
  }
  return picked;
}

function leadersOf(context: Context, races: readonly Race[], judgements: ReadonlyMap<string, Judgement[]>): SearchStep['leaders'] {
  const { settings, space, keys } = context;
  const levelBest = races.slice(0, -1).map((race) => (race.leader === undefined ? undefined : race.scores.get(race.leader)));
  return races.flatMap((race, index) => {
    const leader = race.leader;
    if (leader === undefined) return [];
    const score = race.scores.get(leader)!;
    const others = [...race.scores].filter(([key]) => key !== leader).map(([, other]) => other);
    const margin = others.length === 0 ? undefined : Math.exp(score - Math.max(...others)) - 1;
    const value =
      race.name === ACROSS_LEVELS
        ? Math.exp(races.slice(0, -1).reduce((sum, level, at) => sum + (level.scores.get(leader)! - (levelBest[at] ?? 0)), 0) / (races.length - 1))
        : median(race.fits[0]!.values.get(leader)!);
    const asGood = keys.filter((key) => key === leader || judgements.get(key)?.[index]?.status === 'as good');
    const tieBreak = settings.tieBreak;
    const preferred = tieBreak && [...asGood].sort((a, b) => tieBreak(space.points[keys.indexOf(a)]!, space.points[keys.indexOf(b)]!))[0];
    return [{ level: race.name, point: leader, value, ...(margin !== undefined && { margin }), ...(preferred !== undefined && { preferred }) }];
  });
}

function unresolvedLines(
  context: Context,
  races: readonly Race[],
  judgements: ReadonlyMap<string, Judgement[]>,
  contenders: ReadonlyArray<{ key: string }>,
  open: readonly string[],
  models: Models,
): string[] {
  const lines = contenders.map(({ key }) => {
    const verdicts = judgements.get(key)!;
    const details = verdicts.flatMap((verdict) => (verdict.status === 'contending' ? [verdict.detail] : []));
    if (details.length > 0) return `${key} may still beat a leader by more than ${percent(context.settings.tolerance)}: ${details.join('; ')}`;
    // Raced on for the tie-break alone (tieBreakWants): it cannot beat the leader, and is not yet shown as good.
    const near = verdicts.flatMap((verdict) => (verdict.status === 'not better' ? [verdict.detail] : []));
    return `${key}, preferred by the tie-break, was not yet shown within ${percent(context.settings.tolerance)} of a leader: ${near.join('; ')}`;
  });
  if (open.length > 0) {
    const ranked = open.map((key) => ({ key, excess: acquisition(context, races, models, context.keys.indexOf(key)) })).sort((a, b) => b.excess - a.excess);
    lines.push(
      `${open.length} unmeasured point${open.length === 1 ? '' : 's'} may beat a leader by more than ${percent(context.settings.tolerance)} ` +
        `by the response model (most promising: ${ranked[0]!.key}, upper bound up to ${signedPercent(ranked[0]!.excess + context.zone)} over the leader)`,
    );
  }
  return lines;
}

function budgetDone(context: Context, state: SearchState, unresolved: string[], open?: ReturnType<typeof openOf>): NonNullable<SearchStep['done']> {
  const [spent, budget] = [formatGpuTime(state.spent), formatGpuTime(context.settings.budget ?? 0)];
  return { reason: `budget spent (${spent} of a ${budget} budget) before the search was decided`, resolved: false, unresolved, ...(open && { open }) };
}

function shuffle<T>(items: readonly T[], rng: Random): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(rng() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/**
 * Above this ratio of one measurement's noise to the tolerance, a resolved answer says that its confidence was not
 * borne out there: bench/search-cost found 93% of answers within the tolerance at 1.1× (2% per trial, 1% per start),
 * 88% at 1.6× and 75% at 2.5× and 5× (40/40/20 seeds; docs/benchmarks.md). A real H100 llama.cpp search with
 * 3- and 16-request trials measured 4.0% (2.0×). A measurement is one start, the mean of its trials at a level
 * (`trialsPerStart`): what the racing compares, and what the accuracy follows (3% a trial and 1% a start: 88% right
 * at one trial a start, 1.6×; 97.5% at three, whose mean varies by 2.0%, 1.0×; 40 seeds).
 */
const NOISY_RATIO = 1.5;

/** "; caution: …" when the noisiest level's measured noise is over NOISY_RATIO × the tolerance, else "". */
function noiseCaution(context: Context, levelRaces: readonly Race[]): string {
  const startSigma = (race: Race): number => race.fits[0]!.sigma / Math.sqrt(race.fits[0]!.startWeight);
  const noisiest = levelRaces.reduce<Race | undefined>((most, race) => (most === undefined || startSigma(race) > startSigma(most) ? race : most), undefined);
  if (noisiest === undefined) return '';
  const noise = Math.expm1(startSigma(noisiest));
  const ratio = noise / context.settings.tolerance;
  if (ratio <= NOISY_RATIO) return '';
  const perStart = noisiest.fits[0]!.trialsPerStart;
  return (
    `; caution: one measurement's noise is ${percent(noise)} at ${noisiest.name}${perStart > 1 ? ` (a start's ${perStart} trials averaged)` : ''}, ` +
    `${ratio.toFixed(1)}× the tolerance, where bench/search-cost's answers were within the tolerance in 88% (1.6×) to 75% (2.5–5×) of seeds, ` +
    `not ${percent(context.settings.confidence)} (docs/benchmarks.md): longer trials (more requests each), or more of them a start (search.trialsPerStart), lower the noise`
  );
}

function percent(fraction: number): string {
  return `${Number((fraction * 100).toFixed(2))}%`;
}

/** A score difference as the relative advantage it means, in the objective's direction. */
function signedPercent(scoreDifference: number): string {
  return formatPercent(Math.expm1(scoreDifference) * 100);
}
