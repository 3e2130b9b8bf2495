/** "last ready after 42s, ~12s left" — the prediction shown while waiting, from the last startup of the same config. */
export function formatPrediction(elapsedMs: number, previousReadyMs: number | undefined): string | undefined {
  if (previousReadyMs === undefined) return undefined;
  const last = `last ready after ${formatSeconds(previousReadyMs)}`;
  const remaining = previousReadyMs - elapsedMs;
  return remaining >= 0 ? `${last}, ~${formatSeconds(remaining)} left` : `${last}, ${formatSeconds(-remaining)} over`;
}

/** Compact human duration: 850ms, 4.2s, 42s, 3m05s, 1h02m. */
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
