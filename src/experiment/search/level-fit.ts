/**
 * What one load level's observations say, free of the machine's drift: a two-way model of the log objective,
 * score = point effect + block effect + noise, fitted by alternating means (exact least squares for a connected
 * design). A block is one round of server starts close in time, so its effect absorbs drift; the residual spread
 * is the within-block noise every point shares, pooled over all points with a weak prior (PRIOR_DF blocks' worth
 * of the assumed CV) so that the first blocks, which cannot measure it, neither trust nor ignore one value.
 * Scores are signed so that higher is better for either direction. Two points are compared through their effects,
 * whose variance comes from the normal equations: a contender measured in few blocks against a leader measured in
 * many is known about as well as its own blocks allow, and blocks connected only through other points count too.
 */
import { cholesky, solveLower } from './linear.js';
import type { SearchObservation } from './types.js';

/** Weight of the assumed noise, in degrees of freedom, against the measured one. */
export const PRIOR_DF = 2;
const ITERATIONS = 200;

export interface LevelFit {
  /** Mean score per point and block (several trials of one point in one block averaged). */
  cells: Map<number, Map<string, number>>;
  /** Point effect and the number of blocks it was measured in. */
  effects: Map<string, { score: number; blocks: number }>;
  /** Raw objective values per point (for the figures a person reads). */
  values: Map<string, number[]>;
  /** Noise (standard deviation of one score) and its degrees of freedom, prior included. */
  sigma: number;
  df: number;
  /** Cholesky factor of the normal equations (point effects, then every block's but the first) and each point's row. */
  normal: { lower: number[][]; row: Map<string, number> } | undefined;
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
  const cells = new Map<number, Map<string, number>>();
  let withinSquares = 0;
  let withinDf = 0;
  for (const [block, points] of sums) {
    const means = new Map<string, number>();
    for (const [point, cell] of points) {
      means.set(point, cell.sum / cell.count);
      withinSquares += cell.sumSquares - (cell.sum * cell.sum) / cell.count;
      withinDf += cell.count - 1;
    }
    cells.set(block, means);
  }
  const { effects, residualSquares, residualDf } = twoWay(cells);
  const squares = Math.max(0, withinSquares) + residualSquares;
  const df = withinDf + residualDf;
  const sigma = Math.sqrt((squares + PRIOR_DF * priorSigma ** 2) / (df + PRIOR_DF));
  return { cells, effects, values, sigma, df: df + PRIOR_DF, normal: normalEquations(sums) };
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

function normalEquations(sums: Map<number, Map<string, { count: number }>>): LevelFit['normal'] {
  const row = new Map<string, number>();
  for (const points of sums.values()) for (const point of points.keys()) if (!row.has(point)) row.set(point, row.size);
  const blocks = [...sums.keys()].sort((a, b) => a - b);
  const size = row.size + blocks.length - 1;
  const matrix = Array.from({ length: size }, (_, i) => Array.from({ length: size }, (_, j) => (i === j ? RIDGE : 0)));
  blocks.forEach((block, position) => {
    const blockRow = position === 0 ? undefined : row.size + position - 1;
    for (const [point, cell] of sums.get(block)!) {
      const pointRow = row.get(point)!;
      matrix[pointRow]![pointRow]! += cell.count;
      if (blockRow === undefined) continue;
      matrix[blockRow]![blockRow]! += cell.count;
      matrix[pointRow]![blockRow]! += cell.count;
      matrix[blockRow]![pointRow]! += cell.count;
    }
  });
  const lower = cholesky(matrix);
  return lower && { lower, row };
}

function twoWay(cells: Map<number, Map<string, number>>): {
  effects: Map<string, { score: number; blocks: number }>;
  residualSquares: number;
  residualDf: number;
} {
  const blockEffect = new Map<number, number>([...cells.keys()].map((block) => [block, 0]));
  const pointEffect = new Map<string, number>();
  const blocksOf = new Map<string, number>();
  for (const points of cells.values()) for (const point of points.keys()) blocksOf.set(point, (blocksOf.get(point) ?? 0) + 1);
  for (let iteration = 0; iteration < ITERATIONS; iteration += 1) {
    const sums = new Map<string, number>();
    for (const [block, points] of cells) for (const [point, score] of points) sums.set(point, (sums.get(point) ?? 0) + score - blockEffect.get(block)!);
    for (const [point, sum] of sums) pointEffect.set(point, sum / blocksOf.get(point)!);
    let change = 0;
    for (const [block, points] of cells) {
      let sum = 0;
      for (const [point, score] of points) sum += score - pointEffect.get(point)!;
      const effect = sum / points.size;
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
    for (const [point, score] of points) {
      residualSquares += (score - pointEffect.get(point)! - blockEffect.get(block)!) ** 2;
      cellCount += 1;
    }
  }
  const effects = new Map([...pointEffect].map(([point, score]) => [point, { score: score + centre, blocks: blocksOf.get(point)! }]));
  return { effects, residualSquares, residualDf: Math.max(0, cellCount - pointEffect.size - cells.size + 1) };
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
