/**
 * A small Gaussian process: the response model of a search (log objective over the encoded knobs, encode.ts).
 * Matérn 5/2 kernel with one length scale per coordinate, a constant mean (the observations' mean), and each
 * observation's own noise variance (a point's estimate from n blocks is known to ±σ/√n). Length scales and signal
 * variance are picked by the log marginal likelihood over a coarse grid, one coordinate at a time: a search fits
 * at most a few hundred points, so a Cholesky per candidate setting costs milliseconds and no library is needed.
 */

export interface GpHyper {
  lengthScales: number[];
  signalVariance: number;
}

export interface GpPrediction {
  mean: number;
  variance: number;
}

export interface GpModel {
  hyper: GpHyper;
  predict(x: readonly number[]): GpPrediction;
}

const LENGTH_GRID = [0.15, 0.3, 0.6, 1.2, 2.4];
const SIGNAL_GRID = [0.25, 1, 4];
const SWEEPS = 2;
/** Below this many observations the likelihood says little: fixed, middling settings. */
const FIT_FROM = 5;
const JITTER = 1e-9;

function matern52(a: readonly number[], b: readonly number[], hyper: GpHyper): number {
  let sum = 0;
  for (let i = 0; i < a.length; i += 1) sum += ((a[i]! - b[i]!) / hyper.lengthScales[i]!) ** 2;
  const r = Math.sqrt(5 * sum);
  return hyper.signalVariance * (1 + r + (r * r) / 3) * Math.exp(-r);
}

/** Lower Cholesky factor of a symmetric positive-definite matrix (row-major rows), or undefined when it is not. */
function cholesky(matrix: number[][]): number[][] | undefined {
  const n = matrix.length;
  const lower = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i += 1) {
    for (let j = 0; j <= i; j += 1) {
      let sum = matrix[i]![j]!;
      for (let k = 0; k < j; k += 1) sum -= lower[i]![k]! * lower[j]![k]!;
      if (i === j) {
        if (sum <= 0) return undefined;
        lower[i]![i] = Math.sqrt(sum);
      } else lower[i]![j] = sum / lower[j]![j]!;
    }
  }
  return lower;
}

function solveLower(lower: number[][], b: readonly number[]): number[] {
  const x = new Array<number>(b.length);
  for (let i = 0; i < b.length; i += 1) {
    let sum = b[i]!;
    for (let k = 0; k < i; k += 1) sum -= lower[i]![k]! * x[k]!;
    x[i] = sum / lower[i]![i]!;
  }
  return x;
}

function solveUpper(lower: number[][], b: readonly number[]): number[] {
  const n = b.length;
  const x = new Array<number>(n);
  for (let i = n - 1; i >= 0; i -= 1) {
    let sum = b[i]!;
    for (let k = i + 1; k < n; k += 1) sum -= lower[k]![i]! * x[k]!;
    x[i] = sum / lower[i]![i]!;
  }
  return x;
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
 * Fit the process to observations `y` at `x` with per-observation noise variances; `hyper` reuses settings of an
 * earlier fit (adding pseudo-observations to the same model), otherwise they are chosen by likelihood.
 * `priorVariance` is the signal variance used while there are too few observations to estimate one.
 */
export function fitGp(x: readonly number[][], y: readonly number[], noise: readonly number[], priorVariance: number, hyper?: GpHyper): GpModel {
  const dims = x[0]?.length ?? 0;
  const mean = y.length === 0 ? 0 : y.reduce((sum, value) => sum + value, 0) / y.length;
  const centred = y.map((value) => value - mean);
  const spread = centred.reduce((sum, value) => sum + value * value, 0) / Math.max(1, y.length - 1);
  const chosen = hyper ?? chooseHyper(x, centred, noise, dims, y.length < FIT_FROM ? priorVariance : Math.max(spread, 1e-8));
  let factored = factor(x, centred, noise, chosen);
  // A near-singular matrix (duplicate points with tiny noise): more jitter until it factors.
  for (let boost = 1e-6; !factored && boost < 1; boost *= 10) {
    factored = factor(
      x,
      centred,
      noise.map((value) => value + boost * chosen.signalVariance),
      chosen,
    );
  }
  const { lower, alpha } = factored ?? { lower: [], alpha: [] };
  return {
    hyper: chosen,
    predict(point) {
      if (lower.length === 0) return { mean, variance: chosen.signalVariance };
      const k = x.map((a) => matern52(a, point, chosen));
      const v = solveLower(lower, k);
      const predicted = mean + k.reduce((sum, value, i) => sum + value * alpha[i]!, 0);
      const variance = chosen.signalVariance - v.reduce((sum, value) => sum + value * value, 0);
      return { mean: predicted, variance: Math.max(variance, 0) };
    },
  };
}

function chooseHyper(x: readonly number[][], centred: readonly number[], noise: readonly number[], dims: number, spread: number): GpHyper {
  const start: GpHyper = { lengthScales: new Array<number>(dims).fill(0.6), signalVariance: spread };
  if (centred.length < FIT_FROM) return start;
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
  return best.hyper;
}
