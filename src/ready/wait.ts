import { performance } from 'node:perf_hooks';
import type { ServerProfile } from '../profiles/types.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { formatSeconds } from '../util/format.js';
import { classifyGeneration, classifyHealth, classifyModels, excerpt, type Verdict } from './classify.js';
import { NotReadyError } from './errors.js';
import { predictRemainingMs } from './predict.js';
import { deadEngineDetail, type ProbeOutcome, probe } from './probe.js';
import { DEFAULT_POLL_SCHEDULE, type PollSchedule, pollDelayMs } from './schedule.js';
import type { ExitInfo, NotReadyKind, PhaseTiming, ReadyProgress, ReadyResult } from './types.js';

/** What a launcher reports about the process behind the URL while we wait. */
export type MonitorEvent =
  | { type: 'phase'; name: string }
  /** A fatal log line (the most specific one seen within a short settle time) while the process is still up. */
  | { type: 'fatal'; name: string; hint: string; line: string }
  | { type: 'exit'; info: ExitInfo; fatal?: { name: string; hint: string; line: string } };

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
}

const HEALTH_PROBE_TIMEOUT_MS = 2_000;
// A first generation can be slow (lazy compilation, Ollama loads the model on first use).
const GENERATION_PROBE_TIMEOUT_MS = 120_000;
const HEARTBEAT_MS = 1_000;

type ProbeState = 'waiting for server' | 'waiting for health' | 'checking models' | 'checking generation';

type StepResult = { ready: true; model?: string } | { ready: false; state: ProbeState; detail: string };

/** Poll until the server at baseUrl is healthy and (by default) really serves; throws NotReadyError otherwise. */
export async function waitForReady(options: WaitOptions): Promise<ReadyResult> {
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  const { profile } = options;
  const verify = options.verifyServing ?? profile.openaiCompatible;
  const schedule = options.schedule ?? DEFAULT_POLL_SCHEDULE;
  const start = options.startedAt ?? performance.now();
  const deadline = start + options.timeoutMs;
  const elapsed = () => performance.now() - start;

  const phases: Array<{ phase: string; startMs: number }> = [];
  let currentPhase = 'waiting for server';
  let probeState: ProbeState | undefined;
  let detail = '';
  let failure: NotReadyError | undefined;
  let pendingWake = false;
  let wakeSleeper: (() => void) | undefined;
  let attempt = 0;
  let generationPath = '/v1/completions';
  const stopProbes = new AbortController();

  const phaseTimings = (endMs: number): PhaseTiming[] =>
    phases.map((entry, index) => ({ ...entry, durationMs: (phases[index + 1]?.startMs ?? endMs) - entry.startMs }));
  const emit = () => {
    const elapsedMs = elapsed();
    const phaseStartMs = phases.find((entry) => entry.phase === currentPhase)?.startMs;
    options.onProgress?.({
      elapsedMs,
      phase: currentPhase,
      ...(options.previousReadyMs !== undefined && {
        previousReadyMs: options.previousReadyMs,
        predictedRemainingMs: predictRemainingMs({
          elapsedMs,
          previousReadyMs: options.previousReadyMs,
          phase: currentPhase,
          ...(phaseStartMs !== undefined && { phaseStartMs }),
          ...(options.previousPhases && { previousPhases: options.previousPhases }),
        }),
      }),
      ...(detail && { detail }),
    });
  };
  const enterPhase = (name: string) => {
    if (name === currentPhase && phases.length > 0) return;
    currentPhase = name;
    if (!phases.some((entry) => entry.phase === name)) phases.push({ phase: name, startMs: elapsed() });
    attempt = 0; // a new phase means things are moving: probe fast again
    emit();
  };
  const wake = () => {
    pendingWake = true;
    wakeSleeper?.();
  };
  const fail = (kind: NotReadyKind, message: string, hint: string) => {
    if (failure) return;
    const at = elapsed();
    failure = new NotReadyError(kind, message, hint, { elapsedMs: at, phases: phaseTimings(at) });
    stopProbes.abort(failure);
    wake();
  };

  const failTimeout = () =>
    fail('timeout', `not ready after ${formatSeconds(options.timeoutMs)}: ${currentPhase} (${detail})`, timeoutHint(options.previousReadyMs));

  const unsubscribe = options.monitor?.subscribe((event) => {
    if (event.type === 'phase') {
      enterPhase(event.name);
      wake();
    } else if (event.type === 'fatal') {
      fail('fatal-log', `server log shows ${event.name}: ${excerpt(event.line, 160)}`, event.hint);
    } else {
      const how = event.info.signal ? `was killed by ${event.info.signal}` : `exited with code ${event.info.code}`;
      const seen = event.fatal ? ` (log shows ${event.fatal.name}: ${excerpt(event.fatal.line, 160)})` : '';
      fail('process-exited', `server ${how} before becoming ready${seen}`, event.fatal?.hint ?? 'read the log tail above for the cause');
    }
  });
  const onAbort = () => fail('aborted', `interrupted while waiting for ${baseUrl}`, 'run the command again to resume waiting');
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  const heartbeat = setInterval(emit, HEARTBEAT_MS);
  heartbeat.unref();

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (pendingWake || failure) {
        pendingWake = false;
        resolve();
        return;
      }
      const done = () => {
        clearTimeout(timer);
        wakeSleeper = undefined;
        pendingWake = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      wakeSleeper = done;
    });

  const remainingMs = () => Math.max(1, deadline - performance.now());
  /** A probe whose own timeout was cut short by the overall deadline says nothing new about the server. */
  const call = async (path: string, timeoutMs: number, json?: unknown): Promise<ProbeOutcome> => {
    const allowedMs = Math.min(timeoutMs, remainingMs());
    const outcome = await probe(`${baseUrl}${path}`, { timeoutMs: allowedMs, signal: stopProbes.signal, ...(json !== undefined && { method: 'POST', json }) });
    if (outcome.kind === 'no-answer' && allowedMs < timeoutMs && performance.now() >= deadline) throw new DeadlineReached(`${path}: ${outcome.detail}`);
    return outcome;
  };

  /** The checks in order; the first that does not pass says where we stand. */
  const step = async (): Promise<StepResult> => {
    // Both GETs at once: the model list is only read once health passes, but asking in the same round trip
    // saves one exchange between "able to serve" and "reported ready".
    const [health, models] = await Promise.all([
      call(profile.healthPath, profile.healthProbeTimeoutMs ?? HEALTH_PROBE_TIMEOUT_MS),
      verify ? call(profile.modelsPath, HEALTH_PROBE_TIMEOUT_MS) : undefined,
    ]);
    if (health.kind === 'no-answer') {
      if (health.permanent) fail('unreachable', `cannot reach ${baseUrl}: ${health.detail}`, 'check the host name in the URL');
      return { ready: false, state: 'waiting for server', detail: health.detail };
    }
    const dead = deadEngineDetail(health.answer, profile);
    if (dead) fail('engine-dead', `${baseUrl}${profile.healthPath}: ${dead}`, 'read the server log for the engine error, then restart the server');
    const healthVerdict = classifyHealth(health.answer, profile.healthTextPattern, `${profile.healthPath}`);
    if (healthVerdict.state === 'wrong') {
      fail(
        'bad-response',
        `${baseUrl}${profile.healthPath}: ${healthVerdict.detail}`,
        `check the URL and port, and --profile (profile "${profile.name}" polls ${profile.healthPath})`,
      );
    }
    if (healthVerdict.state !== 'ready') return { ready: false, state: 'waiting for health', detail: healthVerdict.detail };
    if (!models) return { ready: true, ...(options.model && { model: options.model }) };
    if (models.kind === 'no-answer') return { ready: false, state: 'checking models', detail: `${profile.modelsPath}: ${models.detail}` };
    const modelsVerdict = classifyModels(models.answer, profile.modelsPath);
    if (modelsVerdict.state === 'wrong') {
      fail(
        'bad-response',
        `${baseUrl}${profile.modelsPath}: ${modelsVerdict.detail}`,
        'is this an OpenAI-compatible server? pass --no-verify to check health only, or the right --profile',
      );
    }
    if (modelsVerdict.state !== 'ready') return { ready: false, state: 'checking models', detail: modelsVerdict.detail };
    const model = options.model ?? modelsVerdict.detail;

    const generation = await generate(model);
    if (generation.state !== 'ready') return { ready: false, state: 'checking generation', detail: generation.detail };
    return { ready: true, model };
  };

  /** POST /v1/completions with max_tokens 1; chat-only servers answer 4xx there, so try /v1/chat/completions next. */
  const generate = async (model: string): Promise<Verdict> => {
    const attemptPath = async (path: string): Promise<Verdict> => {
      const body =
        path === '/v1/completions'
          ? { model, prompt: 'Hi', max_tokens: 1, temperature: 0 }
          : { model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1, temperature: 0 };
      const outcome = await call(path, GENERATION_PROBE_TIMEOUT_MS, body);
      if (outcome.kind === 'no-answer') return { state: 'not-ready', detail: `${path}: ${outcome.detail}` };
      const verdict = classifyGeneration(outcome.answer, path);
      return verdict.state === 'not-ready' ? { state: 'not-ready', detail: `${path} ${verdict.detail}` } : verdict;
    };
    const first = await attemptPath(generationPath);
    if (first.state !== 'wrong' || generationPath !== '/v1/completions') {
      if (first.state === 'wrong') failGeneration(first.detail);
      return first;
    }
    const chat = await attemptPath('/v1/chat/completions');
    if (chat.state === 'wrong') failGeneration(`${first.detail}; ${chat.detail}`);
    else generationPath = '/v1/chat/completions';
    return chat;
  };
  const failGeneration = (what: string) =>
    fail(
      'bad-response',
      `generation check failed at ${baseUrl}: ${what}`,
      'pass --model NAME for a model the server serves, or --no-verify to skip the generation check',
    );

  try {
    enterPhase('waiting for server');
    while (!failure) {
      let result: StepResult;
      try {
        result = await step();
      } catch (error) {
        if (failure) break;
        if (!(error instanceof DeadlineReached)) throw error;
        detail ||= error.detail;
        failTimeout();
        break;
      }
      if (failure) break;
      if (result.ready) {
        const impostor = await options.checkListener?.();
        if (impostor) {
          fail('wrong-server', impostor.message, impostor.hint);
          break;
        }
        const readyAt = elapsed();
        return {
          baseUrl,
          elapsedMs: readyAt,
          ...(result.model && { model: result.model }),
          phases: phaseTimings(readyAt),
          checks: verify ? ['health', 'models', 'generation'] : ['health'],
        };
      }
      detail = result.detail;
      if (result.state !== probeState) {
        probeState = result.state;
        enterPhase(result.state);
      }
      if (performance.now() >= deadline) {
        failTimeout();
        break;
      }
      await sleep(Math.min(pollDelayMs(attempt++, schedule), remainingMs()));
    }
    throw failure!;
  } finally {
    clearInterval(heartbeat);
    unsubscribe?.();
    options.signal?.removeEventListener('abort', onAbort);
    if (!stopProbes.signal.aborted) stopProbes.abort();
  }
}

class DeadlineReached extends Error {
  constructor(readonly detail: string) {
    super('deadline reached');
  }
}

function timeoutHint(previousReadyMs: number | undefined): string {
  const last = previousReadyMs === undefined ? '' : ` (the last startup of this config was ready after ${formatSeconds(previousReadyMs)})`;
  return `raise --timeout${last}, or check the server log`;
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
