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

/** What the strategy decides after each block. */
export interface SearchStep {
  /** Points to measure in the next block (each measured at every level), in the order to run them. */
  measure: readonly SearchPoint[];
  /** Points dropped by this step, with a reason a person reads ("−7.4% vs leader steps=3,… (CI …)"). */
  drop: ReadonlyArray<{ point: string; reason: string }>;
  /** The current leader per level, and across levels, with its margin over the runner-up. */
  leaders: ReadonlyArray<{ level: string | '*'; point: string; value: number; margin?: number }>;
  /** Set when the search ends: why, and what is and is not resolved. */
  done?: { reason: string; resolved: boolean; unresolved: readonly string[] };
}
