/**
 * What one load level's observations say, free of the machine's drift: a two-way model of the log objective,
 * score = point effect + block effect + start effect + trial noise, fitted on cell means (a cell = one point in one
 * block = one server start) by weighted alternating means (exact weighted least squares for a connected design).
 * A block is one round of server starts close in time, so its effect absorbs drift. A start's trials share its
 * start effect, so the mean of its n trials has variance σs² + σt²/n, not (σs² + σt²)/n: the trials of one start
 * are one measurement of the point, a little less noisy, never n independent ones (bench/search-cost.ts runs k per
 * level on a start, `--trials-per-start`). σt² comes from the spread within cells, σs² from the residuals of the
 * cell means; their sum, one start measured by one trial, is the noise `sigma`, pooled over all points with a weak
 * prior (PRIOR_DF blocks' worth of the assumed CV) so that the first blocks, which cannot measure it, neither trust
 * nor ignore one value. With one trial per start this is the plain two-way fit on the trials.
 * Scores are signed so that higher is better for either direction. Two points are compared through their effects,
 * whose variance comes from the weighted normal equations: a contender measured in few blocks against a leader
 * measured in many is known about as well as its own blocks allow, and blocks connected only through other points
 * count too.
 */
import { cholesky, solveLower } from './linear.js';
import type { SearchObservation } from './types.js';

/** Weight of the assumed noise, in degrees of freedom, against the measured one. */
export const PRIOR_DF = 2;
const ITERATIONS = 200;

export interface LevelFit {
  /** Mean score per point and block (one start's trials averaged). */
  cells: Map<number, Map<string, number>>;
  /** Point effect, the number of blocks it was measured in, and its weight (blocks at one trial a start; more with more trials). */
  effects: Map<string, { score: number; blocks: number; weight: number }>;
  /** Raw objective values per point (for the figures a person reads). */
  values: Map<string, number[]>;
  /** Noise of one measurement (one start, one trial: √(σs² + σt²)) and the degrees of freedom of the fit's variances, prior included. */
  sigma: number;
  df: number;
  /** The trial count most starts had, and such a start's weight: its mean's variance is sigma² / startWeight. */
  trialsPerStart: number;
  startWeight: number;
  /** Cholesky factor of the weighted normal equations (point effects, then every block's but the first) and each point's row. */
  normal: { lower: number[][]; row: Map<string, number> } | undefined;
}

interface Cell {
  mean: number;
  /** 1 / the cell mean's variance in units of sigma²: 1 at one trial, up to 1 / (share of start noise) at many. */
  weight: number;
}

export function fitLevel(observations: readonly SearchObservation[], sign: 1 | -1, priorSigma: number): LevelFit {
  const sums = new Map<number, Map<string, { sum: number; sumSquares: number; count: number }>>();
  const values = new Map<string, number[]>();
  for (const observation of observations) {
    if (!(observation.value > 0) || !Number.isFinite(observation.value)) continue;
    const score = sign * Math.log(observation.value);
    const block = sums.get(observation.block) ?? new Map();
    sums.set(observation.block, block);
    const cell = block.get(observation.point) ?? { sum: 0, sumSquares: 0, count: 0 };
    block.set(observation.point, { sum: cell.sum + score, sumSquares: cell.sumSquares + score * score, count: cell.count + 1 });
    values.set(observation.point, [...(values.get(observation.point) ?? []), observation.value]);
  }
  // Trial noise σt² from the trials of one start about their mean: no start or block effect in it.
  let withinSquares = 0;
  let withinDf = 0;
  const startsWith = new Map<number, number>();
  for (const points of sums.values()) {
    for (const cell of points.values()) {
      withinSquares += Math.max(0, cell.sumSquares - (cell.sum * cell.sum) / cell.count);
      withinDf += cell.count - 1;
      startsWith.set(cell.count, (startsWith.get(cell.count) ?? 0) + 1);
    }
  }
  const trialVariance = withinDf > 0 ? withinSquares / withinDf : 0;
  // The trial count most starts had (the larger on a tie): the weights are relative to it.
  const typical = [...startsWith].reduce((most, entry) => (entry[1] > most[1] || (entry[1] === most[1] && entry[0] > most[0]) ? entry : most), [1, 0])[0];
  /** Variance of the mean of `count` trials of one start, for σ² = σs² + σt² of one trial. */
  const meanVariance = (sigmaSquared: number, count: number): number => sigmaSquared - trialVariance * (1 - 1 / count);
  /** A start's weight in units of one trial's (1 at one trial: the mean of n trials of one start is worth less than n). */
  const weightOf = (sigmaSquared: number, count: number): number => (sigmaSquared > 0 ? sigmaSquared / meanVariance(sigmaSquared, count) : 1);
  const cellsOf = (sigmaSquared: number): Map<number, Map<string, Cell>> =>
    new Map(
      [...sums].map(([block, points]) => [
        block,
        new Map([...points].map(([point, cell]) => [point, { mean: cell.sum / cell.count, weight: weightOf(sigmaSquared, cell.count) }])),
      ]),
    );
  // σ² from the residuals of the cell means, which measure τ = σ² − a (a = σt²(1 − 1/typical)), pooled with the prior
  // on σ²: m·τ = R + Q·τ/σ² (m = residual df + PRIOR_DF, Q = PRIOR_DF × prior², R the residual squares in units of
  // a typical cell), a quadratic in σ² whose larger root is taken. With one trial a start (a = 0): σ² = (R + Q) / m.
  // The weights depend on σ² only when starts had different trial counts: a few rounds settle them.
  const shift = trialVariance * (1 - 1 / typical);
  const prior = PRIOR_DF * priorSigma ** 2;
  let sigmaSquared = Math.max(priorSigma ** 2, trialVariance);
  let fit = twoWay(cellsOf(sigmaSquared));
  for (let round = 0; round < 3; round += 1) {
    const m = fit.residualDf + PRIOR_DF;
    const squares = shift === 0 ? fit.residualSquares : (fit.residualSquares * meanVariance(sigmaSquared, typical)) / sigmaSquared;
    const b = m * shift + squares + prior;
    const next = Math.max(trialVariance, shift === 0 ? b / m : (b + Math.sqrt(Math.max(0, b * b - 4 * m * prior * shift))) / (2 * m));
    const settled = next === sigmaSquared || startsWith.size === 1;
    sigmaSquared = next;
    // One trial a start: every weight is 1 whatever σ², the fit stands.
    if (shift === 0 && startsWith.size <= 1) break;
    fit = twoWay(cellsOf(sigmaSquared));
    if (settled) break;
  }
  return {
    cells: new Map([...fit.cells].map(([block, points]) => [block, new Map([...points].map(([point, cell]) => [point, cell.mean]))])),
    effects: fit.effects,
    values,
    sigma: Math.sqrt(sigmaSquared),
    // The variances compared are of cell means, which only their residuals (and the prior) measure.
    df: fit.residualDf + PRIOR_DF,
    trialsPerStart: typical,
    startWeight: weightOf(sigmaSquared, typical),
    normal: normalEquations(fit.cells),
  };
}

/**
 * One observation per start measured at every level: the geometric mean of its values there (a level's trials in
 * the start averaged first), as `level`. Fitting these gives the across-levels score with the noise that counts: a
 * start's own effect moves all its levels together, so it does not average out over levels as trial noise does,
 * and a variance summed over separate level fits as if they were independent understated it.
 */
export function startMeans(observations: readonly SearchObservation[], levels: readonly string[], level: string): SearchObservation[] {
  const starts = new Map<string, { point: string; block: number; logs: Map<string, number[]> }>();
  for (const observation of observations) {
    if (!(observation.value > 0) || !Number.isFinite(observation.value)) continue;
    const id = `${observation.block}\u0000${observation.point}`;
    const start = starts.get(id) ?? { point: observation.point, block: observation.block, logs: new Map<string, number[]>() };
    starts.set(id, start);
    start.logs.set(observation.level, [...(start.logs.get(observation.level) ?? []), Math.log(observation.value)]);
  }
  const mean = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
  return [...starts.values()].flatMap(({ point, block, logs }) =>
    levels.every((each) => logs.has(each)) ? [{ point, level, block, value: Math.exp(mean(levels.map((each) => mean(logs.get(each)!)))) }] : [],
  );
}

/** A ridge so a design whose blocks are not all connected still factors: a contrast across the gap gets a huge variance. */
const RIDGE = 1e-8;

function normalEquations(cells: Map<number, Map<string, Cell>>): LevelFit['normal'] {
  const row = new Map<string, number>();
  for (const points of cells.values()) for (const point of points.keys()) if (!row.has(point)) row.set(point, row.size);
  const blocks = [...cells.keys()].sort((a, b) => a - b);
  const size = row.size + blocks.length - 1;
  const matrix = Array.from({ length: size }, (_, i) => Array.from({ length: size }, (_, j) => (i === j ? RIDGE : 0)));
  blocks.forEach((block, position) => {
    const blockRow = position === 0 ? undefined : row.size + position - 1;
    for (const [point, cell] of cells.get(block)!) {
      const pointRow = row.get(point)!;
      matrix[pointRow]![pointRow]! += cell.weight;
      if (blockRow === undefined) continue;
      matrix[blockRow]![blockRow]! += cell.weight;
      matrix[pointRow]![blockRow]! += cell.weight;
      matrix[blockRow]![pointRow]! += cell.weight;
    }
  });
  const lower = cholesky(matrix);
  return lower && { lower, row };
}

function twoWay(cells: Map<number, Map<string, Cell>>): {
  cells: Map<number, Map<string, Cell>>;
  effects: Map<string, { score: number; blocks: number; weight: number }>;
  residualSquares: number;
  residualDf: number;
} {
  const blockEffect = new Map<number, number>([...cells.keys()].map((block) => [block, 0]));
  const pointEffect = new Map<string, number>();
  const blocksOf = new Map<string, number>();
  const weightOf = new Map<string, number>();
  for (const points of cells.values()) {
    for (const [point, cell] of points) {
      blocksOf.set(point, (blocksOf.get(point) ?? 0) + 1);
      weightOf.set(point, (weightOf.get(point) ?? 0) + cell.weight);
    }
  }
  for (let iteration = 0; iteration < ITERATIONS; iteration += 1) {
    const sums = new Map<string, number>();
    for (const [block, points] of cells)
      for (const [point, cell] of points) sums.set(point, (sums.get(point) ?? 0) + cell.weight * (cell.mean - blockEffect.get(block)!));
    for (const [point, sum] of sums) pointEffect.set(point, sum / weightOf.get(point)!);
    let change = 0;
    for (const [block, points] of cells) {
      let sum = 0;
      let weight = 0;
      for (const [point, cell] of points) {
        sum += cell.weight * (cell.mean - pointEffect.get(point)!);
        weight += cell.weight;
      }
      const effect = sum / weight;
      change = Math.max(change, Math.abs(effect - blockEffect.get(block)!));
      blockEffect.set(block, effect);
    }
    if (change < 1e-12) break;
  }
  // Block effects centred on their mean, so point effects read as the score of an average block.
  const centre = [...blockEffect.values()].reduce((sum, value) => sum + value, 0) / Math.max(1, blockEffect.size);
  let residualSquares = 0;
  let cellCount = 0;
  for (const [block, points] of cells) {
    for (const [point, cell] of points) {
      residualSquares += cell.weight * (cell.mean - pointEffect.get(point)! - blockEffect.get(block)!) ** 2;
      cellCount += 1;
    }
  }
  const effects = new Map(
    [...pointEffect].map(([point, score]) => [point, { score: score + centre, blocks: blocksOf.get(point)!, weight: weightOf.get(point)! }]),
  );
  return { cells, effects, residualSquares, residualDf: Math.max(0, cellCount - pointEffect.size - cells.size + 1) };
}

/** Difference of two points' effects (a − b), with its standard error, and the fewest blocks either was measured in. */
export interface EffectDifference {
  estimate: number;
  standardError: number;
  blocks: number;
}

/** Averaged over several levels (one level: that level's); undefined when a point is missing at a level. */
export function effectDifference(fits: readonly LevelFit[], a: string, b: string): EffectDifference | undefined {
  let estimate = 0;
  let variance = 0;
  let blocks = Infinity;
  for (const fit of fits) {
    const effectA = fit.effects.get(a);
    const effectB = fit.effects.get(b);
    if (!effectA || !effectB || !fit.normal) return undefined;
    const contrast = new Array<number>(fit.normal.lower.length).fill(0);
    contrast[fit.normal.row.get(a)!] = 1;
    contrast[fit.normal.row.get(b)!] = -1;
    // cᵀ(XᵀX)⁻¹c = |L⁻¹c|² for XᵀX = LLᵀ.
    const solved = solveLower(fit.normal.lower, contrast);
    variance += fit.sigma ** 2 * solved.reduce((sum, value) => sum + value * value, 0);
    estimate += effectA.score - effectB.score;
    blocks = Math.min(blocks, effectA.blocks, effectB.blocks);
  }
  return { estimate: estimate / fits.length, standardError: Math.sqrt(variance) / fits.length, blocks };
}
