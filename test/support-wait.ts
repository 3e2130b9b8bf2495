import { connect } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

/** Poll `condition` every 50 ms until it holds or `timeoutMs` has passed; says whether it held. */
export async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await delay(50);
  }
  return condition();
}

/** Poll `check` every 25 ms until it returns a value; throws naming `what` after `timeoutMs`. */
export async function pollFor<T>(what: string, check: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(25);
  }
}

/** Whether something accepts connections on 127.0.0.1:port. */
export const listening = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/**
 * A query on a running runner's store, or `fallback` while the runner is still creating the schema: it migrates one
 * version at a time, so a table may exist before a later version's column does.
 */
export function unlessNoSchema<T>(query: () => T, fallback: T): T {
  try {
    return query();
  } catch (error) {
    if (/no such (table|column)/.test(String(error))) return fallback;
    throw error;
  }
}
