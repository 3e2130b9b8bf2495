import { median } from 'simple-statistics';
import type { RequestSample, TurnsCheck } from './types.js';

/**
 * What shaped workloads add to a level's figures, from its samples alone: TTFT by turn of multi-turn sessions
 * (later turns find the conversation so far cached: the prefix-cache benefit in latency), and the designed prefix-hit
 * rate the achieved one is read against (shared prefixes, conversation history). Pure.
 */

/** TTFT p50 per turn and sessions cut short by a failed turn; undefined when no sample belongs to a session. */
export function turnsCheck(samples: readonly RequestSample[]): TurnsCheck | undefined {
  const byTurn = new Map<number, number[]>();
  let sessions = 0;
  let endedByFailure = 0;
  for (const sample of samples) {
    if (sample.turn === undefined) continue;
    if (sample.turn === 1) sessions++;
    if (sample.error) {
      // A failed turn ends its session (load/session-loop.ts); a user's abort is not the server's failure.
      if (sample.error.kind !== 'aborted') endedByFailure++;
      continue;
    }
    if (sample.ttftMs === undefined) continue;
    const times = byTurn.get(sample.turn) ?? [];
    times.push(sample.ttftMs);
    byTurn.set(sample.turn, times);
  }
  if (sessions === 0 && byTurn.size === 0) return undefined;
  const ttftByTurn = [...byTurn.entries()].sort(([a], [b]) => a - b).map(([turn, times]) => ({ turn, count: times.length, p50Ms: median(times) }));
  return { ttftByTurn, sessions, endedByFailure };
}

/**
 * Designed prefix-hit rate over the completed requests that carry a target: their target cached tokens over their
 * prompt tokens (the same denominator as the achieved rate). Undefined when none carries one.
 */
export function targetHitRate(samples: readonly RequestSample[]): number | undefined {
  let target = 0;
  let prompt = 0;
  let counted = 0;
  for (const sample of samples) {
    if (sample.error || sample.targetCachedTokens === undefined) continue;
    target += Math.min(sample.targetCachedTokens, sample.inputTokens);
    prompt += sample.inputTokens;
    counted++;
  }
  return counted > 0 && prompt > 0 ? target / prompt : undefined;
}
