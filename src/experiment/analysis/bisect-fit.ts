import { gammaln } from 'simple-statistics';
import { cholesky, solveLower, solveUpper } from '../search/linear.js';
import { studentQuantile } from './drift.js';

/**
 * Least squares for `servelab bisect` (pure): the log of the metric of every trial explained by one level per block
 * (a round's block of interleaved configurations, or its pass) and one coefficient per term, each term a 0/1 column
 * of the configurations. Each coefficient is then the contrast that isolates its term, estimated from every trial
 * of every round at once, with its standard error from the pooled residual variance (Student's t on the residual
 * degrees of freedom).
 */

export interface FitInput {
  /** One row per trial: the term columns (0/1, or products of them). */
  rows: readonly (readonly number[])[];
  /** The trial's block (an index into the block levels). */
  strata: readonly number[];
  /** log(metric) per trial. */
  y: readonly number[];
}

export interface LinearFit {
  /** Term coefficients (block levels left out). */
  beta: number[];
  /** Covariance of `beta` (σ² (XᵀX)⁻¹ restricted to the terms); undefined without residual degrees of freedom. */
  covariance: number[][] | undefined;
  /** Residual degrees of freedom. */
  df: number;
}

/** Undefined when the terms are not estimable from these trials (a column that others determine). */
export function fitTerms(input: FitInput): LinearFit | undefined {
  const strata = Math.max(0, ...input.strata.map((stratum) => stratum + 1));
  const terms = input.rows[0]?.length ?? 0;
  const width = strata + terms;
  const design = input.rows.map((row, index) => {
    const levels = new Array<number>(strata).fill(0);
    levels[input.strata[index]!] = 1;
    return [...levels, ...row];
  });
  const normal = Array.from({ length: width }, (_, i) => Array.from({ length: width }, (_, j) => design.reduce((sum, row) => sum + row[i]! * row[j]!, 0)));
  const lower = cholesky(normal);
  if (!lower) return undefined;
  const solve = (b: readonly number[]): number[] => solveUpper(lower, solveLower(lower, b));
  const xty = Array.from({ length: width }, (_, i) => design.reduce((sum, row, k) => sum + row[i]! * input.y[k]!, 0));
  const all = solve(xty);
  const rss = design.reduce((sum, row, k) => sum + (input.y[k]! - row.reduce((fitted, x, i) => fitted + x * all[i]!, 0)) ** 2, 0);
  const df = design.length - width;
  const beta = all.slice(strata);
  if (df <= 0) return { beta, covariance: undefined, df };
  const sigma2 = rss / df;
  const inverseColumns = Array.from({ length: terms }, (_, t) => solve(Array.from({ length: width }, (_, i) => (i === strata + t ? 1 : 0))));
  const covariance = Array.from({ length: terms }, (_, i) => Array.from({ length: terms }, (_, j) => sigma2 * inverseColumns[j]![strata + i]!));
  return { beta, covariance, df };
}

/** A linear combination of the coefficients (weights per term) with its two-sided CI at 1 − alpha and p-value vs 0. */
export interface Contrast {
  estimate: number;
  low: number | null;
  high: number | null;
  pValue: number | null;
}

export function contrast(fit: LinearFit, weights: readonly number[], alpha: number): Contrast {
  const estimate = weights.reduce((sum, weight, i) => sum + weight * fit.beta[i]!, 0);
  const se = standardError(fit, weights);
  if (se === undefined) return { estimate, low: null, high: null, pValue: null };
  const half = studentQuantile(1 - alpha / 2, fit.df) * se;
  return { estimate, low: estimate - half, high: estimate + half, pValue: se > 0 ? twoSidedP(Math.abs(estimate) / se, fit.df) : null };
}

function standardError(fit: LinearFit, weights: readonly number[]): number | undefined {
  if (!fit.covariance) return undefined;
  const variance = weights.reduce((sum, wi, i) => sum + weights.reduce((inner, wj, j) => inner + wi * wj * fit.covariance![i]![j]!, 0), 0);
  return Math.sqrt(Math.max(0, variance));
}

/** The CI of a ratio of two contrasts (delta method), for the share of the total change the named effects explain. */
export function ratioContrast(fit: LinearFit, numerator: readonly number[], denominator: readonly number[], alpha: number): Contrast {
  const n = contrast(fit, numerator, alpha).estimate;
  const d = contrast(fit, denominator, alpha).estimate;
  const estimate = n / d;
  // Gradient of n/d: numerator weights / d − denominator weights × n / d².
  const se =
    d === 0
      ? undefined
      : standardError(
          fit,
          numerator.map((weight, i) => weight / d - (denominator[i]! * n) / (d * d)),
        );
  if (se === undefined) return { estimate, low: null, high: null, pValue: null };
  const half = studentQuantile(1 - alpha / 2, fit.df) * se;
  return { estimate, low: estimate - half, high: estimate + half, pValue: null };
}

/** Two-sided p of |t| with ν degrees of freedom (regularized incomplete beta by continued fraction). */
export function twoSidedP(t: number, nu: number): number {
  return incompleteBeta(nu / (nu + t * t), nu / 2, 0.5);
}

function incompleteBeta(x: number, a: number, b: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(gammaln(a + b) - gammaln(a) - gammaln(b) + a * Math.log(x) + b * Math.log1p(-x));
  if (x > (a + 1) / (a + b + 2)) return 1 - incompleteBeta(1 - x, b, a);
  // Lentz's continued fraction.
  let f = 1;
  let c = 1;
  let d = 1 - ((a + b) * x) / (a + 1);
  d = 1 / (Math.abs(d) < 1e-300 ? 1e-300 : d);
  f = d;
  for (let m = 1; m <= 200; m += 1) {
    for (const step of [0, 1]) {
      const numerator = step === 0 ? (m * (b - m) * x) / ((a + 2 * m - 1) * (a + 2 * m)) : -((a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1 + numerator * d;
      d = 1 / (Math.abs(d) < 1e-300 ? 1e-300 : d);
      c = 1 + numerator / c;
      if (Math.abs(c) < 1e-300) c = 1e-300;
      f *= c * d;
    }
    if (Math.abs(c * d - 1) < 1e-12) break;
  }
  return (front * f) / a;
}
