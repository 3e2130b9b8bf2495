import type { ServerProfile } from '../profiles/types.js';
import { formatSeconds } from '../util/format.js';
import { excerpt } from './classify.js';
import { predictRemainingMs } from './predict.js';
import { type PollSchedule, pollDelayMs } from './schedule.js';
import type { ExitInfo, NotReadyKind, PhaseTiming, ReadyProgress } from './types.js';

/**
 * The readiness wait as a state machine: `transition` is pure (state + event → state + effects); ./wait.ts does the
 * I/O around it (probes, sleeping, the listener check, progress callbacks).
 *
 *   probing ──not ready──▶ sleeping ──timer or log phase──▶ probing
 *   probing ──checks pass──▶ confirming (who listens?) ──▶ ready
 *   any state but ready ──fatal log, exit, abort, wrong answer, deadline, impostor──▶ failed
 */

/** What a launcher reports about the process behind the URL while we wait. */
export type MonitorEvent =
  | { type: 'phase'; name: string }
  /** A fatal log line (the most specific one seen within a short settle time) while the process is still up. */
  | { type: 'fatal'; name: string; hint: string; line: string }
  | { type: 'exit'; info: ExitInfo; fatal?: { name: string; hint: string; line: string } };

/**
 * How the caller's settings are named, for the hints: `servelab wait`/`launch` flags, or the keys of a server file.
 * `verifyOff` is how to turn the serving check off.
 */
export interface SettingNames {
  timeout: string;
  profile: string;
  model: string;
  verifyOff: string;
}

export const FLAG_SETTINGS: SettingNames = { timeout: '--timeout', profile: '--profile', model: '--model NAME', verifyOff: '--no-verify' };

export type ProbeState = 'waiting for server' | 'waiting for health' | 'checking models' | 'checking generation';

export type GenerationPath = '/v1/completions' | '/v1/chat/completions';

/** What one round of checks found (see ./checks.ts). */
export type CheckOutcome =
  | { type: 'ready'; model?: string; generationPath?: GenerationPath }
  | { type: 'not-ready'; state: ProbeState; detail: string; generationPath?: GenerationPath }
  /** An answer that will not get better by waiting: nothing at that host, or the wrong kind of server. */
  | { type: 'wrong'; check: 'unreachable' | 'health' | 'models' | 'generation' | 'engine-dead'; detail: string }
  /** A probe cut short by the overall deadline, in the check the round had reached. */
  | { type: 'deadline'; state: ProbeState; detail: string };

export interface Failure {
  kind: NotReadyKind;
  message: string;
  hint: string;
  atMs: number;
}

export type Status =
  | { kind: 'probing' }
  | { kind: 'sleeping'; delayMs: number }
  | { kind: 'confirming'; model?: string }
  | { kind: 'ready'; model?: string; atMs: number }
  | { kind: 'failed'; failure: Failure };

export interface WaitState {
  status: Status;
  /** Phases (log phases and probe states) in the order first entered, with their start since the wait began. */
  phases: Array<{ phase: string; startMs: number }>;
  phase: string;
  /** The probe state last reported by the checks (a log phase can be current while it stays the same). */
  probeState?: ProbeState;
  /** What the last check said, for progress lines and the timeout message. */
  detail: string;
  /** Probes since the last phase change: the poll delay grows with it. */
  attempt: number;
  generationPath: GenerationPath;
  /** A log phase arrived while probing: probe again at once instead of sleeping. */
  wakePending: boolean;
  /** The round in flight got further than the last one and is waiting on a slow check (see the `checking` event). */
  checkInFlight?: true;
}

/** Everything an event is judged against; fixed for one wait. */
export interface WaitContext {
  baseUrl: string;
  profile: Pick<ServerProfile, 'name' | 'healthPath' | 'modelsPath'>;
  timeoutMs: number;
  schedule: PollSchedule;
  names: SettingNames;
  previousReadyMs?: number;
}

export type WaitEvent =
  | { type: 'monitor'; event: MonitorEvent; atMs: number }
  | { type: 'aborted'; atMs: number }
  | { type: 'checked'; outcome: CheckOutcome; atMs: number }
  /** A round in flight reached a check that may take long (see CheckTarget.onCheck). */
  | { type: 'checking'; state: ProbeState; detail: string; atMs: number }
  /** The sleep ended (its timer, or a wake). */
  | { type: 'woke' }
  | { type: 'confirmed'; impostor?: { message: string; hint: string }; atMs: number };

/** report: tell onProgress; wake: end a sleep now; stop: abort the probes in flight. */
export type Effect = 'report' | 'wake' | 'stop';

export interface Step {
  state: WaitState;
  effects: Effect[];
}

const FIRST_PHASE: ProbeState = 'waiting for server';

/** `atMs`: time since the start the wait measures from (a launch counts from the spawn). */
export function initialState(atMs: number): WaitState {
  return {
    status: { kind: 'probing' },
    phases: [{ phase: FIRST_PHASE, startMs: atMs }],
    phase: FIRST_PHASE,
    detail: '',
    attempt: 0,
    generationPath: '/v1/completions',
    wakePending: false,
  };
}

export function isDone(state: WaitState): boolean {
  return state.status.kind === 'ready' || state.status.kind === 'failed';
}

export function transition(state: WaitState, event: WaitEvent, context: WaitContext): Step {
  if (isDone(state)) return { state, effects: [] };
  switch (event.type) {
    case 'monitor':
      return onMonitor(state, event.event, event.atMs);
    case 'aborted':
      return fail(state, {
        kind: 'aborted',
        message: `interrupted while waiting for ${context.baseUrl}`,
        hint: 'run the command again to resume waiting',
        atMs: event.atMs,
      });
    case 'checked':
      return onChecked(state, event.outcome, event.atMs, context);
    case 'checking':
      // Only news when the round got further than the last one: the same check again keeps that one's answer.
      if (event.state === state.probeState) return { state, effects: [] };
      return inProbeState({ ...state, detail: event.detail, checkInFlight: true }, event.state, event.atMs);
    case 'woke':
      return { state: state.status.kind === 'sleeping' ? { ...state, status: { kind: 'probing' } } : state, effects: [] };
    case 'confirmed': {
      if (event.impostor) return fail(state, { kind: 'wrong-server', ...event.impostor, atMs: event.atMs });
      const model = state.status.kind === 'confirming' ? state.status.model : undefined;
      return { state: { ...state, status: { kind: 'ready', ...(model && { model }), atMs: event.atMs } }, effects: [] };
    }
  }
}

function onMonitor(state: WaitState, event: MonitorEvent, atMs: number): Step {
  if (event.type === 'phase') {
    // Things are moving: probe at once (a sleep is cut short; a round in flight is followed by another at once).
    const entered = enterPhase(state, event.name, atMs);
    const sleeping = entered.state.status.kind === 'sleeping';
    return {
      state: sleeping ? { ...entered.state, status: { kind: 'probing' } } : { ...entered.state, wakePending: true },
      effects: [...entered.effects, ...(sleeping ? (['wake'] as const) : [])],
    };
  }
  if (event.type === 'fatal') {
    return fail(state, { kind: 'fatal-log', message: `server log shows ${event.name}: ${excerpt(event.line, 160)}`, hint: event.hint, atMs });
  }
  const how = event.info.signal ? `was killed by ${event.info.signal}` : `exited with code ${event.info.code}`;
  const seen = event.fatal ? ` (log shows ${event.fatal.name}: ${excerpt(event.fatal.line, 160)})` : '';
  return fail(state, {
    kind: 'process-exited',
    message: `server ${how} before becoming ready${seen}`,
    hint: event.fatal?.hint ?? 'read the log tail above for the cause',
    atMs,
  });
}

function onChecked(inFlight: WaitState, outcome: CheckOutcome, atMs: number, context: WaitContext): Step {
  const { checkInFlight, ...state } = inFlight;
  switch (outcome.type) {
    case 'ready':
      return {
        state: { ...withPath(state, outcome.generationPath), status: { kind: 'confirming', ...(outcome.model && { model: outcome.model }) } },
        effects: [],
      };
    case 'wrong':
      return fail(state, { ...wrongAnswer(outcome, context), atMs });
    case 'deadline': {
      // A probe cut short by the deadline says nothing new, unless its round got further than the last one and
      // waited there: then an earlier round's "connection refused" says nothing about a generation that hung.
      if (!checkInFlight) return fail(state, timeout({ ...state, detail: state.detail || outcome.detail }, context, atMs));
      const entered = inProbeState({ ...state, detail: outcome.detail }, outcome.state, atMs);
      return failAfter(entered, timeout(entered.state, context, atMs));
    }
    case 'not-ready': {
      const next = inProbeState({ ...withPath(state, outcome.generationPath), detail: outcome.detail }, outcome.state, atMs);
      if (atMs >= context.timeoutMs) return failAfter(next, timeout(next.state, context, atMs));
      const delayMs = Math.min(pollDelayMs(next.state.attempt, context.schedule), Math.max(1, context.timeoutMs - atMs));
      const status: Status = next.state.wakePending ? { kind: 'probing' } : { kind: 'sleeping', delayMs };
      return { state: { ...next.state, attempt: next.state.attempt + 1, wakePending: false, status }, effects: next.effects };
    }
  }
}

/** The probe state the checks reached: a new one is entered as a phase (and reported), the same one changes nothing. */
function inProbeState(state: WaitState, probeState: ProbeState, atMs: number): Step {
  if (probeState === state.probeState) return { state, effects: [] };
  return enterPhase({ ...state, probeState }, probeState, atMs);
}

function withPath(state: WaitState, generationPath: GenerationPath | undefined): WaitState {
  return generationPath ? { ...state, generationPath } : state;
}

/** Entering a new phase restarts the fast polling and is reported; the same phase again changes nothing. */
function enterPhase(state: WaitState, name: string, atMs: number): Step {
  if (name === state.phase) return { state, effects: [] };
  const phases = state.phases.some((entry) => entry.phase === name) ? state.phases : [...state.phases, { phase: name, startMs: atMs }];
  return { state: { ...state, phase: name, phases, attempt: 0 }, effects: ['report'] };
}

function fail(state: WaitState, failure: Failure): Step {
  return { state: { ...state, status: { kind: 'failed', failure } }, effects: ['stop', 'wake'] };
}

function failAfter(step: Step, failure: Failure): Step {
  const failed = fail(step.state, failure);
  return { state: failed.state, effects: [...step.effects, ...failed.effects] };
}

function timeout(state: WaitState, context: WaitContext, atMs: number): Failure {
  const last = context.previousReadyMs === undefined ? '' : ` (the last startup of this config was ready after ${formatSeconds(context.previousReadyMs)})`;
  return {
    kind: 'timeout',
    message: `not ready after ${formatSeconds(context.timeoutMs)}: ${state.phase} (${state.detail})`,
    hint: `raise ${context.names.timeout}${last}, or check the server log`,
    atMs,
  };
}

function wrongAnswer(outcome: Extract<CheckOutcome, { type: 'wrong' }>, context: WaitContext): Omit<Failure, 'atMs'> {
  const { baseUrl, profile, names } = context;
  switch (outcome.check) {
    case 'unreachable':
      return { kind: 'unreachable', message: `cannot reach ${baseUrl}: ${outcome.detail}`, hint: 'check the host name in the URL' };
    case 'health':
      return {
        kind: 'bad-response',
        message: `${baseUrl}${profile.healthPath}: ${outcome.detail}`,
        hint: `check the URL and port, and ${names.profile} (profile "${profile.name}" polls ${profile.healthPath})`,
      };
    case 'engine-dead':
      return {
        kind: 'engine-dead',
        message: `${baseUrl}${profile.healthPath}: ${outcome.detail}`,
        hint: 'read the server log for the engine error, then restart the server',
      };
    case 'models':
      return {
        kind: 'bad-response',
        message: `${baseUrl}${profile.modelsPath}: ${outcome.detail}`,
        hint: `is this an OpenAI-compatible server? use ${names.verifyOff} to check health only, or the right ${names.profile}`,
      };
    case 'generation':
      return {
        kind: 'bad-response',
        message: `generation check failed at ${baseUrl}: ${outcome.detail}`,
        hint: `give ${names.model} for a model the server serves, or ${names.verifyOff} to skip the generation check`,
      };
  }
}

/** Phase timings up to `endMs`: each phase lasts until the next one starts. */
export function phaseTimings(state: WaitState, endMs: number): PhaseTiming[] {
  return state.phases.map((entry, index) => ({ ...entry, durationMs: (state.phases[index + 1]?.startMs ?? endMs) - entry.startMs }));
}

/** The progress report at `elapsedMs`, with the time-to-ready prediction when the last startup is known. */
export function progressOf(state: WaitState, elapsedMs: number, previous: { readyMs?: number; phases?: PhaseTiming[] }): ReadyProgress {
  const phaseStartMs = state.phases.find((entry) => entry.phase === state.phase)?.startMs;
  return {
    elapsedMs,
    phase: state.phase,
    ...(previous.readyMs !== undefined && {
      previousReadyMs: previous.readyMs,
      predictedRemainingMs: predictRemainingMs({
        elapsedMs,
        previousReadyMs: previous.readyMs,
        phase: state.phase,
        ...(phaseStartMs !== undefined && { phaseStartMs }),
        ...(previous.phases && { previousPhases: previous.phases }),
      }),
    }),
    ...(state.detail && { detail: state.detail }),
  };
}
