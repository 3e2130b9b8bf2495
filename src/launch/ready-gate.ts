import { NotReadyError } from '../ready/errors.js';
import type { WaitOptions } from '../ready/wait.js';
import type { LogMonitor } from './log-monitor.js';
import type { LaunchHooks, ServerSpec } from './types.js';

const ERROR_TAIL_LINES = 30;

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

/** A server that did not get ready: stop it (nothing is left running) and rethrow, a NotReadyError with the end of its log. */
export async function failStart(error: unknown, stop: () => Promise<void>, log: LogMonitor): Promise<never> {
  await stop();
  log.drain();
  const tail = log.lastLines(ERROR_TAIL_LINES);
  log.close();
  throw error instanceof NotReadyError ? error.withLogTail(tail) : error;
}
