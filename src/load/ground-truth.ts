import type { StreamState } from './backends.js';

/** One request's token-event timing errors against the simulator's own send times (its `sent_ns` field). */
export interface GroundTruthErrors {
  /** First token event: arrival − sent (ms): what the client adds to TTFT. */
  ttftMs: number;
  /** Each later event: |arrival gap − sent gap| (ms): what the client adds to or takes from an ITL. */
  itlMs: number[];
}

/**
 * For bench/client-overhead: compares each token event's arrival with the simulator's send time on the same
 * monotonic clock. Used as a request context's onTokenEvent, in this thread or inside a load worker (whose
 * outcomes then carry the errors), so timing accuracy is measured on the path that produced the numbers.
 */
export function groundTruthRecorder(): { onTokenEvent(arrivalMs: number, state: StreamState): void; take(state: StreamState): GroundTruthErrors | undefined } {
  const open = new WeakMap<StreamState, { arrival: number; sent: number; errors: GroundTruthErrors }>();
  return {
    onTokenEvent(arrivalMs, state) {
      if (state.simSentNs === undefined) return;
      const sent = Number(state.simSentNs) / 1e6;
      const previous = open.get(state);
      if (previous) {
        previous.errors.itlMs.push(Math.abs(arrivalMs - previous.arrival - (sent - previous.sent)));
        previous.arrival = arrivalMs;
        previous.sent = sent;
      } else {
        open.set(state, { arrival: arrivalMs, sent, errors: { ttftMs: arrivalMs - sent, itlMs: [] } });
      }
    },
    take(state) {
      const errors = open.get(state)?.errors;
      open.delete(state);
      return errors;
    },
  };
}
