/**
 * The one place numbers and durations become text: reports, the UI, CLI tables and progress lines, drift alarms.
 * Missing or non-finite values print as '—'.
 */

/** Three significant figures for small values (two below 0.01, which would print as 0.00), whole numbers from 1000 on. */
export function formatNumber(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  const magnitude = Math.abs(value);
  if (magnitude > 0 && magnitude < 0.01) return value.toPrecision(2);
  if (magnitude >= 1000) return Math.round(value).toLocaleString('en-US');
  if (magnitude >= 100) return value.toFixed(0);
  if (magnitude >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

export function formatPValue(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return value < 0.001 ? '<0.001' : value.toFixed(3);
}

/** Signed whole percent with a typographic minus, e.g. "−29%", "+4%", "0%" (drift alarms). */
export function formatWholePercent(pct: number): string {
  const rounded = Math.round(pct);
  if (rounded === 0) return '0%';
  return rounded < 0 ? `\u2212${-rounded}%` : `+${rounded}%`;
}

/** A fraction as an unsigned whole percent, e.g. 0.713 → "71%" (acceptance rates). */
export function formatShare(fraction: number | null | undefined): string {
  return fraction === null || fraction === undefined || !Number.isFinite(fraction) ? '—' : `${Math.round(fraction * 100)}%`;
}

/**
 * A share that must not round up to a whole: tenths of a percent, rounded down, so only exactly 1 prints "100%"
 * (0.9996 → "99.9%"; output agreement, where 99.96% is not 100%).
 */
export function formatAgreement(fraction: number | null | undefined): string {
  if (fraction === null || fraction === undefined || !Number.isFinite(fraction)) return '—';
  return fraction === 1 ? '100%' : `${(Math.floor(fraction * 1000) / 10).toFixed(1)}%`;
}

/** Signed percent with one decimal, e.g. "+12.5%", "−3.0%". */
export function formatPercent(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  const text = Math.abs(value).toFixed(1);
  return value < 0 ? `\u2212${text}%` : `+${text}%`;
}

/** "4.2 s", "42 s", "3 min 05 s", "1 h 02 min" (tenths below 10 s: simulator startups and short trials last that long). */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 9_950) return `${(ms / 1000).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${String(seconds % 60).padStart(2, '0')} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, '0')} min`;
}

/**
 * GPU time (seconds of one GPU, a search's budget unit) as text: under an hour a duration ("4 min 01 s", "2 min"),
 * which is wall time on one GPU per server; from an hour on, GPU-hours ("1.5 GPU-hours").
 */
export function formatGpuTime(seconds: number): string {
  if (seconds >= 3600) return `${formatNumber(seconds / 3600)} GPU-hours`;
  return formatDuration(seconds * 1000).replace(/ min 00 s$/, ' min');
}

/** A predicted duration, which may be unknown (no history and nothing declared): said so, never a dash or a guess. */
export function formatPredicted(ms: number | undefined): string {
  return ms === undefined ? 'unknown' : formatDuration(ms);
}

/** Compact duration for progress lines: 850ms, 4.2s, 42s, 3m05s, 1h02m. */
export function formatSeconds(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const seconds = ms / 1000;
  if (seconds < 10) return `${seconds.toFixed(1)}s`;
  if (seconds < 60) return `${Math.round(seconds)}s`;
  const totalSeconds = Math.round(seconds);
  const minutes = Math.floor(totalSeconds / 60);
  if (minutes < 60) return `${minutes}m${String(totalSeconds % 60).padStart(2, '0')}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, '0')}m`;
}

export function runDurationMs(startedAt: string, finishedAt: string | undefined, now = Date.now()): number {
  return (finishedAt ? Date.parse(finishedAt) : now) - Date.parse(startedAt);
}

/** A ratio vs the baseline as its signed change: 1.125 → "+12.5%" (verdict tables, charts and CLI alike). */
export function formatChange(ratio: number | null | undefined): string {
  return ratio === null || ratio === undefined || !Number.isFinite(ratio) ? '—' : formatPercent((ratio - 1) * 100);
}

/** A confidence interval of a ratio, in the unit of formatChange: "+3.0% … +8.0%". */
export function formatChangeInterval(low: number | null | undefined, high: number | null | undefined): string {
  return low === null || low === undefined || high === null || high === undefined ? '—' : `${formatChange(low)} … ${formatChange(high)}`;
}

/** "trial 3/20": the 1-based run-order position out of the planned trials (experiment/spec/trial-number.ts). */
export function formatTrialNumber(position: number | undefined, total: number): string {
  return `trial ${position ?? '?'}/${total}`;
}

/** Blocks are stored 0-based and shown 1-based, like trial numbers. */
export function formatBlock(block: number): string {
  return `block ${block + 1}`;
}

/** A share with two decimals, e.g. an accuracy of 0.8125 → "0.81". */
export function formatShareDecimal(fraction: number | null | undefined): string {
  return fraction === null || fraction === undefined || !Number.isFinite(fraction) ? '—' : fraction.toFixed(2);
}

/** A difference of two shares in signed percentage points, e.g. −0.031 → "−3.1 pts" (accuracy vs the baseline). */
export function formatPoints(delta: number | null | undefined): string {
  if (delta === null || delta === undefined || !Number.isFinite(delta)) return '—';
  const text = Math.abs(delta * 100).toFixed(1);
  return text === '0.0' ? '±0.0 pts' : `${delta < 0 ? '\u2212' : '+'}${text} pts`;
}
