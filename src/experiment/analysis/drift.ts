import { erf, gammaln, mean, median, medianAbsoluteDeviation, sampleStandardDeviation } from 'simple-statistics';
import { formatChanges } from '../../fingerprint/diff.js';
import type { FingerprintChange } from '../../fingerprint/types.js';
import { formatNumber, formatWholePercent } from '../../util/format.js';

export interface DriftCheck {
  drifted: boolean;
  /**
   * The history is too short to tell drift from noise, or so noisy that only a change beyond its wide band is caught:
   * say so instead of passing silently.
   */
  unguarded?: 'history too short' | 'history too noisy';
  /** Mean of the current samples (one or two trials). */
  current: number;
  /** Median of the recorded history (NaN when there is none). */
  reference: number;
  /** (current − reference) / reference, in percent. */
  changePct: number;
  /** Half-width of the noise band, in percent (same unit as changePct). */
  band: number;
}

/** 1.4826 · MAD estimates the standard deviation of normal data while ignoring outliers in the history. */
const MAD_TO_SIGMA = 1.4826;
/**
 * From this many history values on, the robust MAD spread is stable enough; below, the sample SD is used (a MAD of
 * five values is often tiny by chance, and a busy host's outliers then alarm — measured with bench/drift-specificity).
 */
const ROBUST_FROM = 10;
/** Fewer history values than this give no usable noise estimate at all. */
const MIN_HISTORY = 3;
/** A band wider than this guards against nothing a tuning decision cares about. */
export const MAX_USEFUL_BAND_PCT = 20;

/**
 * Has a variant moved away from its recorded history by more than noise? The band is a prediction interval for
 * the mean of `current.length` (or `trialsInMean`) new trials: max(relativeBand, t(ν = n−1) · σ̂ · √(1/k + 1/n)) relative to the
 * history median, where t is the Student quantile matching ±`sigmas` of a normal — so a history of three trials
 * gets the wide band it deserves instead of a normal one that alarms on every busy afternoon. Either direction
 * counts: an unexpectedly faster baseline also means the environment is not what the earlier runs measured.
 */
export function checkDrift(current: number[], history: number[], options: { relativeBand?: number; sigmas?: number; trialsInMean?: number } = {}): DriftCheck {
  const relativeBand = options.relativeBand ?? 0.05;
  const sigmas = options.sigmas ?? 3;
  const currentMean = current.length > 0 ? mean(current) : Number.NaN;
  const reference = history.length > 0 ? median(history) : Number.NaN;
  const quiet = { drifted: false, current: currentMean, reference, changePct: 0, band: relativeBand * 100 };
  if (history.length === 0 || current.length === 0) return quiet;
  if (history.length < MIN_HISTORY) return { ...quiet, unguarded: 'history too short' };
  if (reference === 0) {
    return { drifted: currentMean !== 0, current: currentMean, reference, changePct: currentMean === 0 ? 0 : Infinity, band: relativeBand * 100 };
  }
  const n = history.length;
  const sigma = n >= ROBUST_FROM ? MAD_TO_SIGMA * medianAbsoluteDeviation(history) : sampleStandardDeviation(history);
  const spread =
    (studentQuantile(0.5 * (1 + erf(sigmas / Math.SQRT2)), n - 1) * sigma * Math.sqrt(1 / (options.trialsInMean ?? current.length) + 1 / n)) /
    Math.abs(reference);
  const band = Math.max(relativeBand, spread) * 100;
  const changePct = ((currentMean - reference) / Math.abs(reference)) * 100;
  const drifted = Math.abs(changePct) > band;
  // Too wide to catch a drift a tuning decision cares about, but a change beyond even that band is still drift.
  if (band > MAX_USEFUL_BAND_PCT) return { drifted, current: currentMean, reference, changePct, band, unguarded: 'history too noisy' };
  return { drifted, current: currentMean, reference, changePct, band };
}

/** Quantile p (> 0.5) of Student's t with ν degrees of freedom: bisection on the CDF, integrated with Simpson's rule. */
export function studentQuantile(p: number, nu: number): number {
  const logNorm = gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * Math.log(nu * Math.PI);
  const density = (x: number): number => Math.exp(logNorm - ((nu + 1) / 2) * Math.log1p((x * x) / nu));
  const cdf = (t: number): number => {
    const steps = 2000;
    const h = t / steps;
    let sum = density(0) + density(t);
    for (let i = 1; i < steps; i += 1) sum += density(i * h) * (i % 2 === 1 ? 4 : 2);
    return 0.5 + (sum * h) / 3;
  };
  let low = 0;
  let high = 1;
  while (cdf(high) < p) high *= 2;
  for (let i = 0; i < 60 && high - low > 1e-6; i += 1) {
    const mid = (low + high) / 2;
    if (cdf(mid) < p) low = mid;
    else high = mid;
  }
  return (low + high) / 2;
}

export type DriftDecision =
  /** Within the band, or nothing to compare with: no further look at this pair. */
  | { kind: 'ok'; check: DriftCheck }
  /** The first trial is beyond the band: wait for the second to confirm. */
  | { kind: 'suspect'; check: DriftCheck }
  /** The second trial did not confirm the first one's deviation. */
  | { kind: 'not-confirmed'; check: DriftCheck }
  | { kind: 'alarm'; check: DriftCheck };

/**
 * The drift rule on a pair's first trials of a run (`own`, in order) against its history. The first trial beyond
 * the band of a two-trial mean only raises a suspicion — that band is narrow, so the first look is sensitive — and
 * the alarm needs the second trial beyond it on the same side too (and so their mean): one noisy trial never
 * stops a run. A pair planned with a single trial (`confirmable` false) is judged on that trial with the one-trial band.
 * Undefined once the pair has more than two trials (decided already).
 */
export function driftDecision(
  own: readonly number[],
  history: readonly number[],
  options: { relativeBand?: number; sigmas?: number; confirmable: boolean },
): DriftDecision | undefined {
  if (own.length === 0 || own.length > 2) return undefined;
  const { confirmable, ...band } = options;
  const first = checkDrift([own[0]!], [...history], { ...band, ...(confirmable && { trialsInMean: 2 }) });
  if (own.length === 1) {
    if (!first.drifted) return { kind: 'ok', check: first };
    return { kind: confirmable ? 'suspect' : 'alarm', check: first };
  }
  if (!first.drifted) return undefined;
  // Both trials must be beyond the band on the same side: one outlier trial (a busy moment) cannot carry the mean.
  const second = checkDrift([own[1]!], [...history], { ...band, trialsInMean: 2 });
  const both = checkDrift([...own], [...history], band);
  const confirmed = both.drifted && second.drifted && Math.sign(second.changePct) === Math.sign(first.changePct);
  return { kind: confirmed ? 'alarm' : 'not-confirmed', check: both };
}

export interface DriftAlarm {
  variant: string;
  /** Unit shown after the current value, e.g. "tok/s". */
  metricLabel: string;
  current: number;
  reference: number;
  changePct: number;
  /** diffFingerprints(recorded, current). */
  changes: FingerprintChange[];
  /** Machine-state differences from the reference trials (telemetry/attribution.ts); may be empty. */
  machine?: string[];
}

/**
 * One line for the user, e.g.
 * `baseline 62.9 tok/s vs 88.8 recorded (−29%); environment differs: NCCL_PROTO LL → (unset)`, with what the
 * machine did differently when telemetry saw it: `…; machine state differs: GPU 0 SM clock median 1410 vs 1980 MHz`.
 */
export function formatDriftAlarm(alarm: DriftAlarm): string {
  const measured = `${alarm.variant} ${formatNumber(alarm.current)} ${alarm.metricLabel} vs ${formatNumber(alarm.reference)} recorded (${formatWholePercent(alarm.changePct)})`;
  const machine = alarm.machine ?? [];
  const environment = alarm.changes.length > 0 ? `environment differs: ${formatChanges(alarm.changes)}` : 'environment identical';
  if (machine.length > 0) return `${measured}; ${environment}; machine state differs: ${machine.join('; ')}`;
  return alarm.changes.length > 0 ? `${measured}; ${environment}` : `${measured}; environment identical — check the hardware / other load`;
}
