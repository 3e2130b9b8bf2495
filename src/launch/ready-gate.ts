import { NotReadyError } from '../ready/errors.js';
import type { WaitOptions } from '../ready/wait.js';
import type { LogMonitor } from './log-monitor.js';
import type { LaunchHooks, ServerSpec } from './types.js';

const ERROR_TAIL_LINES = 30;
/**
 * How long a server whose picked port another process answers on may take to fail its own bind. Long enough for
 * a start that binds early (the simulator, llama.cpp, vLLM's API socket); a server that binds after loading is
 * stopped without its word, as before.
 */
const LOST_PORT_GRACE_MS = 5000;

/** The readiness-wait options that the spec and the launch hooks decide: the same for a local and a remote server. */
export function readyOptionsOf(
  spec: ServerSpec,
  hooks: LaunchHooks,
): Pick<WaitOptions, 'profile' | 'timeoutMs' | 'verifyServing' | 'model' | 'previousReadyMs' | 'previousPhases' | 'onProgress' | 'signal' | 'settingNames'> {
  return {
    profile: spec.profile,
    timeoutMs: spec.readyTimeoutMs,
    ...(spec.verifyServing !== undefined && { verifyServing: spec.verifyServing }),
    ...(spec.model !== undefined && { model: spec.model }),
    ...(hooks.previousReadyMs !== undefined && { previousReadyMs: hooks.previousReadyMs }),
    ...(hooks.previousPhases && { previousPhases: hooks.previousPhases }),
    ...(hooks.onProgress && { onProgress: hooks.onProgress }),
    ...(hooks.signal && { signal: hooks.signal }),
    ...(hooks.settingNames && { settingNames: hooks.settingNames }),
  };
}

/**
 * A server that did not get ready: stop it (nothing is left running) and rethrow, a NotReadyError with the end of its
 * log. On a port servelab picked, another process answering (`wrong-server`) is most often one that bound the port
 * between the pick and our server's bind: our server is given LOST_PORT_GRACE_MS to exit first, so that its
 * EADDRINUSE is in the tail and `startOnChosenPort` starts again on another port instead of failing.
 */
export async function failStart(error: unknown, stop: () => Promise<void>, log: LogMonitor, pickedPort?: { exited: Promise<unknown> }): Promise<never> {
  if (pickedPort && error instanceof NotReadyError && error.kind === 'wrong-server') {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([pickedPort.exited, new Promise((resolve) => (timer = setTimeout(resolve, LOST_PORT_GRACE_MS)))]);
    clearTimeout(timer);
  }
  await stop();
  log.drain();
  const tail = log.lastLines(ERROR_TAIL_LINES);
  log.close();
  throw error instanceof NotReadyError ? error.withLogTail(tail) : error;
}
