import { median, medianAbsoluteDeviation } from 'simple-statistics';
import type { FingerprintChange } from '../fingerprint/types.js';
import { formatChanges } from '../fingerprint/diff.js';
import { formatNumber, formatWholePercent } from '../util/format.js';

export interface DriftCheck {
  drifted: boolean;
  /** Median of the current samples. */
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
 * Has a variant (normally the baseline) moved away from its recorded history by more than noise?
 * The band is max(relativeBand, sigmas × robust spread of the history) so a noisy metric does not alarm on every
 * run and a very stable one still tolerates a few percent. Either direction counts: an unexpectedly faster baseline
 * also means the environment is not what the earlier runs measured.
 */
export function checkDrift(
  current: number[],
  history: number[],
  options: { relativeBand?: number; sigmas?: number } = {},
): DriftCheck {
  const relativeBand = options.relativeBand ?? 0.05;
  const sigmas = options.sigmas ?? 3;
  const currentMedian = current.length > 0 ? median(current) : Number.NaN;
  if (history.length === 0 || current.length === 0) {
    return { drifted: false, current: currentMedian, reference: history.length > 0 ? median(history) : Number.NaN, changePct: 0, band: relativeBand * 100 };
  }
  const reference = median(history);
  if (reference === 0) {
    return { drifted: currentMedian !== 0, current: currentMedian, reference, changePct: currentMedian === 0 ? 0 : Infinity, band: relativeBand * 100 };
  }
  const spread = (sigmas * MAD_TO_SIGMA * medianAbsoluteDeviation(history)) / Math.abs(reference);
  const band = Math.max(relativeBand, spread) * 100;
  const changePct = ((currentMedian - reference) / Math.abs(reference)) * 100;
  return { drifted: Math.abs(changePct) > band, current: currentMedian, reference, changePct, band };
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
}

/**
 * One line for the user, e.g.
 * `baseline 62.9 tok/s vs 88.8 recorded (−29%); environment differs: NCCL_PROTO LL → (unset)`.
 */
export function formatDriftAlarm(alarm: DriftAlarm): string {
  const measured = `${alarm.variant} ${formatNumber(alarm.current)} ${alarm.metricLabel} vs ${formatNumber(alarm.reference)} recorded (${formatWholePercent(alarm.changePct)})`;
  const cause =
    alarm.changes.length > 0
      ? `environment differs: ${formatChanges(alarm.changes)}`
      : 'environment identical — check the hardware / other load';
  return `${measured}; ${cause}`;
}
