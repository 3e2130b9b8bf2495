import { erf, gammaln, mean, median, medianAbsoluteDeviation, sampleStandardDeviation } from 'simple-statistics';
import { formatChanges } from '../../fingerprint/diff.js';
import type { FingerprintChange } from '../../fingerprint/types.js';
import { formatNumber, formatWholePercent } from '../../util/format.js';

export interface DriftCheck {
  drifted: boolean;
  /**
   * The band is too wide to catch a drift a tuning decision cares about: say so instead of passing silently. "too
   * short" when more history trials at the same spread would narrow it enough (or there are fewer than 3), "too
   * noisy" when even an endless history of that spread would not.
   */
  unguarded?: 'history too short' | 'history too noisy';
  /** With "history too short" and at least 3 trials: history trials that would bring the band within MAX_USEFUL_BAND_PCT. */
  historyNeeded?: number;
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
export const MIN_HISTORY = 3;
/** A band wider than this guards against nothing a tuning decision cares about. */
export const MAX_USEFUL_BAND_PCT = 20;
/** The longest history "history too short" may ask for; beyond it the spread itself is the problem. */
const MAX_HISTORY_NEEDED = 1000;

export interface DriftSettings {
  relativeBand?: number;
  sigmas?: number;
}

/**
 * Has a variant moved away from its recorded history by more than noise? The band is a prediction interval for
 * the mean of `current.length` (or `trialsInMean`) new trials: max(relativeBand, t(ν = n−1) · σ̂ · √(1/k + 1/n)) relative to the
 * history median, where t is the Student quantile matching ±`sigmas` of a normal — so a history of three trials
 * gets the wide band it deserves instead of a normal one that alarms on every busy afternoon. Either direction
 * counts: an unexpectedly faster baseline also means the environment is not what the earlier runs measured.
 */
export function checkDrift(current: number[], history: number[], options: DriftSettings & { trialsInMean?: number } = {}): DriftCheck {
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
  const k = options.trialsInMean ?? current.length;
  const p = 0.5 * (1 + erf(sigmas / Math.SQRT2));
  const sigma = (n >= ROBUST_FROM ? MAD_TO_SIGMA * medianAbsoluteDeviation(history) : sampleStandardDeviation(history)) / Math.abs(reference);
  // Band in percent for a history of `size` trials at this relative spread.
  const bandFor = (size: number): number => Math.max(relativeBand, studentQuantile(p, size - 1) * sigma * Math.sqrt(1 / k + 1 / size)) * 100;
  const band = bandFor(n);
  const changePct = ((currentMean - reference) / Math.abs(reference)) * 100;
  const drifted = Math.abs(changePct) > band;
  // Too wide to catch a drift a tuning decision cares about, but a change beyond even that band is still drift.
  if (band <= MAX_USEFUL_BAND_PCT) return { drifted, current: currentMean, reference, changePct, band };
  const needed = historyNeeded(bandFor, n);
  const unguarded = needed === undefined ? 'history too noisy' : 'history too short';
  return { drifted, current: currentMean, reference, changePct, band, unguarded, ...(needed !== undefined && { historyNeeded: needed }) };
}

/** The smallest history size whose band is within MAX_USEFUL_BAND_PCT (bandFor falls with size), if one of reasonable length is. */
function historyNeeded(bandFor: (size: number) => number, from: number): number | undefined {
  if (bandFor(MAX_HISTORY_NEEDED) > MAX_USEFUL_BAND_PCT) return undefined;
  let low = from;
  let high = MAX_HISTORY_NEEDED;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (bandFor(mid) <= MAX_USEFUL_BAND_PCT) high = mid;
    else low = mid;
  }
  return high;
}

const quantiles = new Map<string, number>();

/** Quantile p (> 0.5) of Student's t with ν degrees of freedom: bisection on the CDF, integrated with Simpson's rule. Memoized. */
export function studentQuantile(p: number, nu: number): number {
  const key = `${p}:${nu}`;
  const known = quantiles.get(key);
  if (known !== undefined) return known;
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
  const quantile = (low + high) / 2;
  quantiles.set(key, quantile);
  return quantile;
}

export interface DriftDecision {
  /**
   * ok: within the band, or nothing to compare with. suspect: the first trial is beyond the band and the second
   * will confirm or not. not-confirmed: the second trial did not confirm the first one's deviation. alarm: drift.
   */
  kind: 'ok' | 'suspect' | 'not-confirmed' | 'alarm';
  /**
   * What was judged: ok/suspect the first trial; not-confirmed the second trial (the one that did not confirm);
   * alarm the mean of both (or the single trial of a pair planned with one).
   */
  check: DriftCheck;
  /** How many of the run's trials the judgement used (1: decided on the first trial). */
  trials: 1 | 2;
  /** Why, in one line, in the rule's own terms. */
  reason: string;
}

/**
 * THE drift rule, used by the runner (after each of a pair's first two trials), `servelab diff`, the report and the
 * UI alike: a run's first trials of a pair (`own`, in order; only the first two count) against its history. The
 * first trial beyond the band of a two-trial mean only raises a suspicion — that band is narrow, so the first look
 * is sensitive — and the alarm needs the second trial beyond the same band on the same side too (and so their
 * mean): one noisy trial never stops a run. A first trial within the band decides the pair. A pair planned with a
 * single trial (`confirmable` false) is judged on that trial with the one-trial band. Undefined without trials.
 */
export function judgeDrift(own: readonly number[], history: readonly number[], options: DriftSettings & { confirmable: boolean }): DriftDecision | undefined {
  if (own.length === 0) return undefined;
  const { confirmable, ...band } = options;
  const first = checkDrift([own[0]!], [...history], { ...band, ...(confirmable && { trialsInMean: 2 }) });
  if (!first.drifted) return { kind: 'ok', check: first, trials: 1, reason: withinReason(first, history.length) };
  const firstOff = `first trial ${formatWholePercent(first.changePct)} is beyond the band ±${first.band.toFixed(0)}%`;
  if (!confirmable) return { kind: 'alarm', check: first, trials: 1, reason: `${firstOff} (the pair has one planned trial)` };
  if (own.length === 1) return { kind: 'suspect', check: first, trials: 1, reason: `${firstOff}: its second trial confirms or not` };
  const second = checkDrift([own[1]!], [...history], { ...band, trialsInMean: 2 });
  const secondOff = `second trial ${formatWholePercent(second.changePct)}`;
  if (second.drifted && Math.sign(second.changePct) === Math.sign(first.changePct)) {
    // Both beyond the same band on the same side: so is their mean.
    const both = checkDrift([own[0]!, own[1]!], [...history], band);
    return { kind: 'alarm', check: both, trials: 2, reason: `${firstOff}, and the ${secondOff} too` };
  }
  const why = second.drifted
    ? `${secondOff} is beyond the band on the other side: noise, not a shift`
    : `${secondOff} is within the band ±${second.band.toFixed(0)}%: one trial beyond it does not stop a run`;
  return { kind: 'not-confirmed', check: second, trials: 2, reason: `${firstOff}, but the ${why}` };
}

/** The reason of a judgement within the band: nothing to compare with, or how well the history guards. */
function withinReason(check: DriftCheck, historySize: number): string {
  if (historySize === 0) return 'no history to compare with';
  const within = `${formatWholePercent(check.changePct)} is within the band ±${check.band.toFixed(0)}%`;
  if (check.unguarded === 'history too noisy')
    return `${within}, but the history is too noisy to guard against drift (band > ${MAX_USEFUL_BAND_PCT}% at any length)`;
  if (check.unguarded === 'history too short') {
    const more =
      check.historyNeeded === undefined
        ? `at least ${MIN_HISTORY} are needed`
        : `about ${check.historyNeeded} would narrow the band to ${MAX_USEFUL_BAND_PCT}%`;
    return `${within}, but the history is too short to guard against drift: ${historySize} trials (${more})`;
  }
  return within;
}

/**
 * The runner's incremental view of judgeDrift, called after each stored trial of a pair: the judgement when this
 * trial makes one, undefined when there is nothing new to judge (no trials, past the second, or the pair was
 * decided on its first trial already).
 */
export function driftDecision(
  own: readonly number[],
  history: readonly number[],
  options: DriftSettings & { confirmable: boolean },
): DriftDecision | undefined {
  if (own.length === 0 || own.length > 2) return undefined;
  const decision = judgeDrift(own, history, options);
  return decision && own.length === 2 && decision.trials === 1 ? undefined : decision;
}

/** A short status of a judgement for tables: DRIFT, suspect, not confirmed, history too short/noisy, within noise. */
export function driftStatus(decision: DriftDecision, historySize: number): string {
  if (decision.kind === 'alarm') return 'DRIFT';
  if (decision.kind === 'suspect') return 'suspect (one trial)';
  if (decision.kind === 'not-confirmed') return 'not confirmed';
  if (historySize === 0) return 'no history';
  return decision.check.unguarded ?? 'within noise';
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
