/**
 * What one load level's observations say, free of the machine's drift: a two-way model of the log objective,
 * score = point effect + block effect + noise, fitted by alternating means (exact least squares for a connected
 * design). A block is one round of server starts close in time, so its effect absorbs drift; the residual spread
 * is the within-block noise every point shares, pooled over all points with a weak prior (PRIOR_DF blocks' worth
 * of the assumed CV) so that the first blocks, which cannot measure it, neither trust nor ignore one value.
 * Scores are signed so that higher is better for either direction.
 */
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
  return { cells, effects, values, sigma: Math.sqrt((squares + PRIOR_DF * priorSigma ** 2) / (df + PRIOR_DF)), df: df + PRIOR_DF };
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

/** Paired difference of two points' scores over the blocks that measured both (a − b), with its standard error. */
export interface PairedDifference {
  estimate: number;
  standardError: number;
  shared: number;
}

/** Per-block differences averaged over several levels (one level: that level's); blocks must hold both points at every level. */
export function pairedDifference(fits: readonly LevelFit[], a: string, b: string): PairedDifference | undefined {
  const first = fits[0];
  if (!first) return undefined;
  let sum = 0;
  let shared = 0;
  for (const block of first.cells.keys()) {
    let difference = 0;
    let complete = true;
    for (const fit of fits) {
      const cell = fit.cells.get(block);
      const scoreA = cell?.get(a);
      const scoreB = cell?.get(b);
      if (scoreA === undefined || scoreB === undefined) {
        complete = false;
        break;
      }
      difference += scoreA - scoreB;
    }
    if (!complete) continue;
    sum += difference / fits.length;
    shared += 1;
  }
  if (shared === 0) return undefined;
  // Each block's difference of two points carries the noise twice; levels' noises are independent.
  const variance = (2 * fits.reduce((total, fit) => total + fit.sigma ** 2, 0)) / fits.length ** 2;
  return { estimate: sum / shared, standardError: Math.sqrt(variance / shared), shared };
}
