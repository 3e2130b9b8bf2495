import { formatSeconds } from '../util/format.js';
import type { PhaseTiming } from './types.js';

/**
 * Time left until ready, from the last startup of the same config. When that startup went through the current
 * phase too, the estimate is anchored on the phase: a load that started late (slow disk, busy node) shifts the
 * prediction instead of making it optimistic. Otherwise it is simply last time-to-ready minus elapsed.
 */
export function predictRemainingMs(input: {
  elapsedMs: number;
  previousReadyMs: number;
  phase: string;
  phaseStartMs?: number;
  previousPhases?: PhaseTiming[];
}): number {
  const previous = input.previousPhases?.find((entry) => entry.phase === input.phase);
  if (previous === undefined || input.phaseStartMs === undefined) return input.previousReadyMs - input.elapsedMs;
  return input.previousReadyMs - previous.startMs - (input.elapsedMs - input.phaseStartMs);
}

/** "last ready after 42s, ~12s left" — the prediction shown while waiting, from the last startup of the same config. */
export function formatPrediction(elapsedMs: number, previousReadyMs: number | undefined, predictedRemainingMs?: number): string | undefined {
  if (previousReadyMs === undefined) return undefined;
  const last = `last ready after ${formatSeconds(previousReadyMs)}`;
  const remaining = predictedRemainingMs ?? previousReadyMs - elapsedMs;
  return remaining >= 0 ? `${last}, ~${formatSeconds(remaining)} left` : `${last}, ${formatSeconds(-remaining)} over`;
}
