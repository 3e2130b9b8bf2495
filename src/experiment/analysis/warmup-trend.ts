/**
 * Trend within a run: is a workload's first trial after a server start unlike that variant's later trials of it on
 * the same starts? A server's first batches of a new size run slower (kernels compiled or autotuned per shape on
 * first use, allocator growth), so a warm-up that did not reach the workload's batch size leaves the first trial
 * after each start slow. Pure.
 *
 * Rule: the median of the first trials lies outside the later trials' range widened by K_MAD × their median
 * absolute deviation, and by at least MIN_RELATIVE of their median (trials of a quiet machine can have a MAD of
 * almost nothing). Needs MIN_LATER later trials: fewer cannot say what "later" looks like.
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
  const margin = Math.max(K_MAD * medianAbsoluteDeviation(later), MIN_RELATIVE * Math.abs(laterMedian));
  const firstMedian = median(first);
  if (firstMedian >= Math.min(...later) - margin && firstMedian <= Math.max(...later) + margin) return undefined;
  return { firstMedian, laterMedian, change: laterMedian === 0 ? 0 : (firstMedian - laterMedian) / laterMedian, firsts: first.length, laters: later.length };
}
