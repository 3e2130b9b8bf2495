import { performance } from 'node:perf_hooks';

export const nowMs = (): number => performance.now();

/**
 * Resolve at (not before) the absolute time `deadlineMs` on the performance.now() clock, or as soon as `signal`
 * aborts. Timers only have millisecond resolution and may fire a little early, so re-arm until the deadline passed.
 */
export function sleepUntil(deadlineMs: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    let timer: NodeJS.Timeout | undefined;
    const done = (): void => {
      if (timer) clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const arm = (): void => {
      const remaining = deadlineMs - nowMs();
      if (remaining <= 0) return done();
      timer = setTimeout(arm, Math.ceil(remaining));
    };
    signal.addEventListener('abort', done, { once: true });
    arm();
  });
}

export const yieldToEventLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
