import { performance } from 'node:perf_hooks';
import type { ServerProfile } from '../profiles/types.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { type CheckTarget, runChecks } from './checks.js';
import { NotReadyError } from './errors.js';
import { DEFAULT_POLL_SCHEDULE, type PollSchedule } from './schedule.js';
import type { PhaseTiming, ReadyProgress, ReadyResult } from './types.js';
import {
  FLAG_SETTINGS,
  initialState,
  isDone,
  type MonitorEvent,
  phaseTimings,
  progressOf,
  type SettingNames,
  transition,
  type WaitContext,
  type WaitEvent,
} from './wait-machine.js';

export { FLAG_SETTINGS, type MonitorEvent, type SettingNames } from './wait-machine.js';

export interface ServerMonitor {
  /** Returns an unsubscribe function. */
  subscribe(listener: (event: MonitorEvent) => void): () => void;
}

export interface WaitOptions {
  baseUrl: string;
  profile: ServerProfile;
  timeoutMs: number;
  /** Check /v1/models and one tiny generation; default: the profile's `openaiCompatible`. */
  verifyServing?: boolean;
  model?: string;
  previousReadyMs?: number;
  /** Phase timings of that startup, for a phase-anchored estimate. */
  previousPhases?: PhaseTiming[];
  onProgress?: (progress: ReadyProgress) => void;
  signal?: AbortSignal;
  monitor?: ServerMonitor;
  schedule?: PollSchedule;
  /** performance.now() of the start to measure from (launch counts from spawn); default: now. */
  startedAt?: number;
  /**
   * Asked once the checks pass: why the server that answered is not the launched one (another process holds the
   * port), or undefined when it is or cannot be told. A launcher that knows the process passes it.
   */
  checkListener?: () => Promise<{ message: string; hint: string } | undefined> | { message: string; hint: string } | undefined;
  /** How the caller's settings are named in the hints (default: the CLI flags, `raise --timeout`). */
  settingNames?: SettingNames;
}

const HEARTBEAT_MS = 1_000;

/** Poll until the server at baseUrl is healthy and (by default) really serves; throws NotReadyError otherwise. */
export async function waitForReady(options: WaitOptions): Promise<ReadyResult> {
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  const { profile } = options;
  const verify = options.verifyServing ?? profile.openaiCompatible;
  const start = options.startedAt ?? performance.now();
  const elapsed = () => performance.now() - start;
  const context: WaitContext = {
    baseUrl,
    profile,
    timeoutMs: options.timeoutMs,
    schedule: options.schedule ?? DEFAULT_POLL_SCHEDULE,
    names: options.settingNames ?? FLAG_SETTINGS,
    ...(options.previousReadyMs !== undefined && { previousReadyMs: options.previousReadyMs }),
  };
  const previous = {
    ...(options.previousReadyMs !== undefined && { readyMs: options.previousReadyMs }),
    ...(options.previousPhases && { phases: options.previousPhases }),
  };
  const stopProbes = new AbortController();
  const sleeper = new Sleeper();
  const report = () => options.onProgress?.(progressOf(state, elapsed(), previous));

  let state = initialState(elapsed());
  /** The one place the state changes; the effects are the transition's I/O. */
  const dispatch = (event: WaitEvent) => {
    const step = transition(state, event, context);
    state = step.state;
    for (const effect of step.effects) {
      if (effect === 'report') report();
      else if (effect === 'wake') sleeper.wake();
      else if (!stopProbes.signal.aborted) stopProbes.abort();
    }
  };

  report();
  const unsubscribe = options.monitor?.subscribe((event) => dispatch({ type: 'monitor', event, atMs: elapsed() }));
  const onAbort = () => dispatch({ type: 'aborted', atMs: elapsed() });
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const heartbeat = setInterval(report, HEARTBEAT_MS);
  heartbeat.unref();
  const target: CheckTarget = {
    baseUrl,
    profile,
    verify,
    ...(options.model && { model: options.model }),
    deadline: start + options.timeoutMs,
    signal: stopProbes.signal,
    onCheck: (probeState, detail) => dispatch({ type: 'checking', state: probeState, detail, atMs: elapsed() }),
  };

  try {
    for (;;) {
      const { status } = state;
      switch (status.kind) {
        case 'probing': {
          const outcome = await runChecks(target, state.generationPath).catch((error: unknown) => {
            // A probe aborted because the wait failed meanwhile: the failure is the answer.
            if (isDone(state)) return undefined;
            throw error;
          });
          if (outcome) dispatch({ type: 'checked', outcome, atMs: elapsed() });
          break;
        }
        case 'sleeping':
          await sleeper.sleep(status.delayMs);
          dispatch({ type: 'woke' });
          break;
        case 'confirming': {
          const impostor = await options.checkListener?.();
          dispatch({ type: 'confirmed', ...(impostor && { impostor }), atMs: elapsed() });
          break;
        }
        case 'ready':
          return {
            baseUrl,
            elapsedMs: status.atMs,
            ...(status.model && { model: status.model }),
            phases: phaseTimings(state, status.atMs),
            checks: verify ? ['health', 'models', 'generation'] : ['health'],
          };
        case 'failed': {
          const { kind, message, hint, atMs } = status.failure;
          throw new NotReadyError(kind, message, hint, { elapsedMs: atMs, phases: phaseTimings(state, atMs) });
        }
      }
    }
  } finally {
    clearInterval(heartbeat);
    unsubscribe?.();
    options.signal?.removeEventListener('abort', onAbort);
    if (!stopProbes.signal.aborted) stopProbes.abort();
    sleeper.wake();
  }
}

/** A sleep that a wake ends early. */
class Sleeper {
  private wakeNow: (() => void) | undefined;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeNow = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeNow = done;
    });
  }

  wake(): void {
    this.wakeNow?.();
  }
}

/** http://host:port with no trailing slash; a bad URL is a usage error, not something to wait out. */
export function normalizeBaseUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`);
  } catch {
    throw new UserError(`invalid server URL "${text}"`, 'write it like http://127.0.0.1:8000', ExitCode.usage);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UserError(`unsupported URL scheme "${url.protocol}" in "${text}"`, 'use an http:// or https:// URL', ExitCode.usage);
  }
  // OpenAI clients take ".../v1" as their base URL; health and model paths are relative to the server root.
  return `${url.origin}${url.pathname.replace(/\/+$/, '').replace(/\/v1$/, '')}`;
}
