/**
 * Trend within a run: is a workload's first trial after a server start unlike that variant's later trials of it on
 * the same starts? A server's first batches of a new size run slower (kernels compiled or autotuned per shape on
 * first use, allocator growth), so a warm-up that did not reach the workload's batch size leaves the first trial
 * after each start slow. Pure.
 *
 * Rule: the median of the first trials lies outside the later trials' range widened by K_MAD × their median
 * absolute deviation, and by at least MIN_RELATIVE (trials of a quiet machine can have a MAD of almost nothing).
 * Both are taken on the logarithms when every value is positive: throughput and latency vary by ratios, and on a
 * linear scale a loaded machine's spread pushed the lower end below zero, where no slow first trial could fall (CI
 * on acb3153: a first trial of 57 tok/s beside later ones of 250, 346 and 428 went unflagged). Needs MIN_LATER later
 * trials: fewer cannot say what "later" looks like.
 */
import { median, medianAbsoluteDeviation } from 'simple-statistics';

export const K_MAD = 3;
export const MIN_RELATIVE = 0.05;
export const MIN_LATER = 2;

export interface FirstTrialOutlier {
  firstMedian: number;
  laterMedian: number;
  /** (firstMedian − laterMedian) / laterMedian. */
  change: number;
  firsts: number;
  laters: number;
}

/** `firsts`: the metric of each first trial after a start; `laters`: of the trials after it. Undefined: not an outlier (or too few to tell). */
export function firstTrialOutlier(firsts: readonly number[], laters: readonly number[]): FirstTrialOutlier | undefined {
  const first = firsts.filter(Number.isFinite);
  const later = laters.filter(Number.isFinite);
  if (first.length === 0 || later.length < MIN_LATER) return undefined;
  const laterMedian = median(later);
  const firstMedian = median(first);
  const ratios = [...first, ...later].every((value) => value > 0);
  const scale = ratios ? Math.log : (value: number): number => value;
  const scaled = later.map(scale);
  const floor = ratios ? Math.log1p(MIN_RELATIVE) : MIN_RELATIVE * Math.abs(laterMedian);
  const margin = Math.max(K_MAD * medianAbsoluteDeviation(scaled), floor);
  const at = scale(firstMedian);
  if (at >= Math.min(...scaled) - margin && at <= Math.max(...scaled) + margin) return undefined;
  return { firstMedian, laterMedian, change: laterMedian === 0 ? 0 : (firstMedian - laterMedian) / laterMedian, firsts: first.length, laters: later.length };
}
