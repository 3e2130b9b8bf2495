/**
 * Delays between readiness probes: start fast, grow geometrically, stop growing at a cap.
 *
 * Why these numbers: a probe of a local server costs well under a millisecond (a refused connect, or a GET the
 * server answers from memory), so even at the cap the load is ten requests a second, under 1% of a core. The
 * start (25 ms) catches a server that is already up, or nearly, within tens of milliseconds; the cap (100 ms)
 * bounds how late we notice a server that has just become ready — 50 ms on average, leaving room for the
 * models and generation checks within the goal of reporting ready within 100 ms (median) of the server being
 * able to serve. A larger cap would save nothing that matters and miss that goal. `launch` also probes at once on every new
 * startup phase in the server log, so there most detections do not wait for the schedule at all.
 */
export interface PollSchedule {
  initialMs: number;
  factor: number;
  capMs: number;
}

export const DEFAULT_POLL_SCHEDULE: PollSchedule = { initialMs: 25, factor: 2, capMs: 100 };

/** Delay before probe number `attempt` + 1 (attempt counts from 0). */
export function pollDelayMs(attempt: number, schedule: PollSchedule = DEFAULT_POLL_SCHEDULE): number {
  return Math.min(schedule.capMs, schedule.initialMs * schedule.factor ** Math.max(0, attempt));
}
