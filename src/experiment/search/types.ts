/**
 * The contract between a search's strategy (pure: which points to measure next, which are out, when to stop —
 * `strategy.ts`) and its runner side (the experiment file's `search:` section, server configs from points, trials,
 * views). The strategy sees only knob values and objective values per load level; it never starts anything, so
 * the runner, the fake executor and bench/search-cost.ts's virtual clock drive the same decisions.
 */

/** One knob's value: a number for integer/real knobs, a string for a list of names. */
export type KnobValue = number | string;

/** One point of the space: a value for every knob, by knob name. */
export type SearchPoint = Readonly<Record<string, KnobValue>>;

export interface Knob {
  name: string;
  /** Every value the knob may take, in order (an integer or real range already discretised by the file's layer). */
  values: readonly KnobValue[];
  /** Numeric knobs are modelled by position/value; list knobs are categorical. */
  numeric: boolean;
  /** Model the knob on a log scale (a range written with `log: true`). */
  log: boolean;
}

export interface SearchSpace {
  knobs: readonly Knob[];
  /** Every valid point (constraints between knobs applied), each with a stable key (`pointKey`). */
  points: readonly SearchPoint[];
}

/** Stable key of a point: knob=value pairs in knob order, e.g. `steps=3,topk=2,draftTokens=4`. */
export function pointKey(space: SearchSpace, point: SearchPoint): string {
  return space.knobs.map((knob) => `${knob.name}=${point[knob.name]}`).join(',');
}

export interface SearchSettings {
  /** 'maximize' (tok/s) or 'minimize' (latency, J/token). */
  direction: 'maximize' | 'minimize';
  /** Relative tolerance: configs within it of the best are as good (0.02 = 2%). */
  tolerance: number;
  /** Confidence of the final statement "the leader is within the tolerance of the best" (e.g. 0.95). */
  confidence: number;
  /** Among points within the tolerance of the leader, the preferred one sorts first (fewest draft tokens, …). */
  tieBreak?: (a: SearchPoint, b: SearchPoint) => number;
  /** Load levels (workload names) the search answers for; a best config per level and one across them. */
  levels: readonly string[];
  /** Budget in cost units (seconds of GPU time, as the caller counts them); undefined = until resolved. */
  budget?: number;
  seed: number;
  /** Points of the space-filling first block (default: √(valid points), 4 to 12). */
  initialPoints?: number;
  /** Most points (server starts) per block after the first (default 12): leaders, contenders, then new points. */
  blockSize?: number;
  /** Assumed coefficient of variation of one trial, weighed as 2 blocks' worth of evidence until blocks measure it (default 0.03). */
  noiseCv?: number;
}

/** One valid trial's objective value at one load level. Invalid trials never reach the strategy. */
export interface SearchObservation {
  point: string; // pointKey
  level: string;
  /** The block (round) it was measured in: values of one block are compared with each other first. */
  block: number;
  value: number;
}

export interface SearchState {
  observations: readonly SearchObservation[];
  /** Cost spent so far, in the budget's units. */
  spent: number;
  /** Points already dropped (out or infeasible), with the reason, as earlier steps decided them. */
  dropped: ReadonlyMap<string, string>;
}

/**
 * Why a point needs no more measuring: `out` (worse than the leader by more than the tolerance, at the stated
 * confidence), `as good` (within the tolerance of the leader either way), `not better` (cannot beat the leader by
 * more than the tolerance, though not shown within it: behind at one level, as good at another, or too noisy).
 */
export type DropStatus = 'out' | 'as good' | 'not better';

/**
 * How a point stood in one race (a load level, or '*' across levels) when a step decided about it: the figures its
 * reason words, as data every view reads. `racing`: it may still beat the leader by more than the tolerance.
 * The figures are absent where there was nothing to compare (the point leads the race, or has no comparison yet).
 */
export interface RaceFigures {
  level: string;
  status: 'leader' | 'racing' | DropStatus;
  /** The race's leader it was judged against (a point key). */
  versus?: string;
  /** Its difference to that leader, relative, in the objective's direction (−0.074 = 7.4% worse), and the racing bounds. */
  estimate?: number;
  lower?: number;
  upper?: number;
  /** Blocks the comparison rests on. */
  blocks?: number;
}

/** What the strategy decides after each block. */
export interface SearchStep {
  /** Points to measure in the next block (each measured at every level), in the order to run them. */
  measure: readonly SearchPoint[];
  /** Points dropped by this step, with a reason a person reads ("−7.4% vs leader steps=3,… (CI …)") and its figures per race. */
  drop: ReadonlyArray<{ point: string; reason: string; status?: DropStatus; races?: readonly RaceFigures[] }>;
  /**
   * The current leader per level, and across levels, with its margin over the runner-up (relative, in the
   * objective's direction: 0.012 = 1.2% better). A level's value is the leader's median there; across levels ('*')
   * it is the leader's geometric mean of per-level ratios to each level's leader (1 when it leads every level).
   * `preferred`: with a tie-break, its first choice among the points shown within the tolerance of the leader.
   */
  leaders: ReadonlyArray<{ level: string | '*'; point: string; value: number; margin?: number; preferred?: string }>;
  /**
   * Set when the search ends: why, and what is and is not resolved (`unresolved`: lines a person reads); `open`: each
   * measured point still undecided (the budget ended the search), with its figures in every race.
   */
  done?: { reason: string; resolved: boolean; unresolved: readonly string[]; open?: ReadonlyArray<{ point: string; races: readonly RaceFigures[] }> };
}
