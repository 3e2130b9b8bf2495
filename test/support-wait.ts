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
