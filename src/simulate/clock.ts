import { performance } from 'node:perf_hooks';

export const nowMs = (): number => performance.now();

/**
 * Sleeps shorter than this ignore aborts (the caller checks the signal on wake-up): attaching and detaching an
 * abort listener on every decode step costs more than the few milliseconds of slot a cancelled request keeps.
 */
const ABORTABLE_SLEEP_MS = 50;

/**
 * Resolve at (not before) the absolute time `deadlineMs` on the performance.now() clock; long sleeps also end as
 * soon as `signal` aborts. Timers have millisecond resolution and may fire a little early, so re-arm until due.
 */
export function sleepUntil(deadlineMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const abortable = deadlineMs - nowMs() > ABORTABLE_SLEEP_MS;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const arm = (): void => {
      const remaining = deadlineMs - nowMs();
      if (remaining > 0) {
        timer = setTimeout(arm, Math.ceil(remaining));
        return;
      }
      if (abortable) signal.removeEventListener('abort', onAbort);
      resolve();
    };
    if (abortable) signal.addEventListener('abort', onAbort, { once: true });
    arm();
  });
}

export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
