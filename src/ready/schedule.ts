/**
 * Delays between readiness probes: start fast, grow geometrically, stop growing at a cap.
 *
 * Why these numbers: the goal is to report ready within 100 ms (median) of the server being able to serve.
 * Detection waits on average half the cap, and the serving checks add round trips (tens of milliseconds on a
 * busy host), so the cap must stay well below 200 ms: 80 ms gives ~40 ms on average. A slow cap such as 1 s
 * would add ~500 ms — the waste this command exists to remove. The cost is small: a probe of a local server
 * is a refused connect (free) or a GET it answers from memory, so ~12 per second is well under 1% of a core.
 * The start (20 ms) catches a server that is already up within one or two round trips. `launch` also probes
 * at once on every new startup phase in the server log, so most of its detections do not wait at all.
 */
export interface PollSchedule {
  initialMs: number;
  factor: number;
  capMs: number;
}

export const DEFAULT_POLL_SCHEDULE: PollSchedule = { initialMs: 20, factor: 2, capMs: 80 };

/** Delay before probe number `attempt` + 1 (attempt counts from 0). */
export function pollDelayMs(attempt: number, schedule: PollSchedule = DEFAULT_POLL_SCHEDULE): number {
  return Math.min(schedule.capMs, schedule.initialMs * schedule.factor ** Math.max(0, attempt));
}
