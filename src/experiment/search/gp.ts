/**
 * A small Gaussian process: the response model of a search (log objective over the encoded knobs, encode.ts).
 * Matérn 5/2 kernel with one length scale per coordinate, a constant mean (the observations' mean), and each
 * observation's own noise variance (a point's estimate from n blocks is known to ±σ/√n). Length scales and signal
 * variance are picked by the log marginal likelihood over a coarse grid, one coordinate at a time: a search fits
 * at most a few hundred points, so a Cholesky per candidate setting costs milliseconds and no library is needed.
 * Below FIT_FROM observations the likelihood cannot choose a length scale: a long one promises that the points
 * between the measured ones follow them, a short one does not, and the data fit both. So the model keeps every
 * length scale of the grid there, and an unmeasured point's upper bound is the highest over them: it is ruled out
 * only when every length scale rules it out. Its signal variance is at least the measured spread (a prior narrower
 * than the data would promise what the data contradicts: a 1-D peak beside a measured point was ruled out 8%
 * above the leader that way, test/search-strategy.test.ts).
 */
import { cholesky, solveLower, solveUpper } from './linear.js';

export interface GpHyper {
  lengthScales: number[];
  signalVariance: number;
}

export interface GpPrediction {
  mean: number;
  variance: number;
}

export interface GpModel {
  /** The settings the model predicts with: the likeliest one, or below FIT_FROM observations every length scale. */
  hypers: GpHyper[];
  /** Prediction under the first settings. */
  predict(x: readonly number[]): GpPrediction;
  /** The highest mean + z·sd over the settings. */
  upperBound(x: readonly number[], z: number): number;
}

const LENGTH_GRID = [0.15, 0.3, 0.6, 1.2, 2.4];
const SIGNAL_GRID = [0.25, 1, 4];
const SWEEPS = 2;
/** Below this many observations the likelihood says little: every length scale of the grid is kept. */
const FIT_FROM = 5;
const JITTER = 1e-9;

function matern52(a: readonly number[], b: readonly number[], hyper: GpHyper): number {
  let sum = 0;
  for (let i = 0; i < a.length; i += 1) sum += ((a[i]! - b[i]!) / hyper.lengthScales[i]!) ** 2;
  const r = Math.sqrt(5 * sum);
  return hyper.signalVariance * (1 + r + (r * r) / 3) * Math.exp(-r);
}

interface Factored {
  lower: number[][];
  alpha: number[];
  logLikelihood: number;
}

function factor(x: readonly number[][], centred: readonly number[], noise: readonly number[], hyper: GpHyper): Factored | undefined {
  const n = x.length;
  const k = x.map((a, i) => x.map((b, j) => matern52(a, b, hyper) + (i === j ? noise[i]! + JITTER * hyper.signalVariance : 0)));
  const lower = cholesky(k);
  if (!lower) return undefined;
  const alpha = solveUpper(lower, solveLower(lower, centred));
  let logDet = 0;
  for (let i = 0; i < n; i += 1) logDet += Math.log(lower[i]![i]!);
  const fit = centred.reduce((sum, value, i) => sum + value * alpha[i]!, 0);
  return { lower, alpha, logLikelihood: -0.5 * fit - logDet - 0.5 * n * Math.log(2 * Math.PI) };
}

/**
 * Fit the process to observations `y` at `x` with per-observation noise variances; `hypers` reuses settings of an
 * earlier fit (adding pseudo-observations to the same model), otherwise they are chosen by likelihood.
 * `priorVariance` is the least signal variance assumed while there are too few observations to estimate one (their
 * spread, when larger, is taken instead: a prior narrower than the data would promise what the data contradicts).
 */
export function fitGp(x: readonly number[][], y: readonly number[], noise: readonly number[], priorVariance: number, hypers?: readonly GpHyper[]): GpModel {
  const dims = x[0]?.length ?? 0;
  const mean = y.length === 0 ? 0 : y.reduce((sum, value) => sum + value, 0) / y.length;
  const centred = y.map((value) => value - mean);
  const spread = centred.reduce((sum, value) => sum + value * value, 0) / Math.max(1, y.length - 1);
  const chosen = hypers ?? chooseHypers(x, centred, noise, dims, y.length < FIT_FROM ? Math.max(priorVariance, spread) : Math.max(spread, 1e-8));
  const predictors = chosen.map((hyper) => predictor(x, centred, noise, mean, hyper));
  return {
    hypers: [...chosen],
    predict: predictors[0]!,
    upperBound(point, z) {
      let most = -Infinity;
      for (const predict of predictors) {
        const prediction = predict(point);
        most = Math.max(most, prediction.mean + z * Math.sqrt(prediction.variance));
      }
      return most;
    },
  };
}

function predictor(
  x: readonly number[][],
  centred: readonly number[],
  noise: readonly number[],
  mean: number,
  hyper: GpHyper,
): (point: readonly number[]) => GpPrediction {
  let factored = factor(x, centred, noise, hyper);
  // A near-singular matrix (duplicate points with tiny noise): more jitter until it factors.
  for (let boost = 1e-6; !factored && boost < 1; boost *= 10) {
    factored = factor(
      x,
      centred,
      noise.map((value) => value + boost * hyper.signalVariance),
      hyper,
    );
  }
  const { lower, alpha } = factored ?? { lower: [], alpha: [] };
  return (point) => {
    if (lower.length === 0) return { mean, variance: hyper.signalVariance };
    const k = x.map((a) => matern52(a, point, hyper));
    const v = solveLower(lower, k);
    const predicted = mean + k.reduce((sum, value, i) => sum + value * alpha[i]!, 0);
    const variance = hyper.signalVariance - v.reduce((sum, value) => sum + value * value, 0);
    return { mean: predicted, variance: Math.max(variance, 0) };
  };
}

/** The likeliest settings by the log marginal likelihood; below FIT_FROM observations, every length scale of the grid. */
function chooseHypers(x: readonly number[][], centred: readonly number[], noise: readonly number[], dims: number, spread: number): GpHyper[] {
  const start: GpHyper = { lengthScales: new Array<number>(dims).fill(0.6), signalVariance: spread };
  if (centred.length < FIT_FROM) return LENGTH_GRID.map((length) => ({ lengthScales: new Array<number>(dims).fill(length), signalVariance: spread }));
  let best = { hyper: start, logLikelihood: factor(x, centred, noise, start)?.logLikelihood ?? -Infinity };
  const consider = (hyper: GpHyper): void => {
    const logLikelihood = factor(x, centred, noise, hyper)?.logLikelihood ?? -Infinity;
    if (logLikelihood > best.logLikelihood + 1e-9) best = { hyper, logLikelihood };
  };
  for (let sweep = 0; sweep < SWEEPS; sweep += 1) {
    for (const multiple of SIGNAL_GRID) consider({ ...best.hyper, signalVariance: spread * multiple });
    for (let dim = 0; dim < dims; dim += 1) {
      for (const length of LENGTH_GRID) {
        const lengthScales = [...best.hyper.lengthScales];
        lengthScales[dim] = length;
        consider({ ...best.hyper, lengthScales });
      }
    }
  }
  return [best.hyper];
}
