import { performance } from 'node:perf_hooks';
import type { ServerProfile } from '../profiles/types.js';
import { classifyGeneration, classifyHealth, classifyModels, type Verdict } from './classify.js';
import { deadEngineDetail, probe } from './probe.js';
import type { CheckOutcome, GenerationPath, ProbeState } from './wait-machine.js';

const HEALTH_PROBE_TIMEOUT_MS = 2_000;
// A first generation can be slow (lazy compilation, Ollama loads the model on first use).
const GENERATION_PROBE_TIMEOUT_MS = 120_000;

export interface CheckTarget {
  baseUrl: string;
  profile: ServerProfile;
  /** Check /v1/models and one tiny generation after health. */
  verify: boolean;
  model?: string;
  /** performance.now() at which the whole wait gives up. */
  deadline: number;
  /** Aborts the probes in flight once the wait has failed. */
  signal: AbortSignal;
  /**
   * Told when a round moves on to a check that may take long (the generation): where it stands and what the server
   * answered so far, so progress and a timeout name that instead of an earlier round's "connection refused".
   */
  onCheck?: (state: ProbeState, detail: string) => void;
}

/** One round of the readiness checks, in order; the first that does not pass says where the server stands. */
export async function runChecks(target: CheckTarget, generationPath: GenerationPath): Promise<CheckOutcome> {
  const round: Round = { state: 'waiting for server', received: [] };
  try {
    return await checkRound(target, generationPath, round);
  } catch (error) {
    if (error instanceof DeadlineReached) return { type: 'deadline', state: round.state, detail: withReceived(error.detail, round) };
    throw error;
  }
}

/** Where one round stands, and what the server answered in it (e.g. "/health 200", "/v1/models lists m"). */
interface Round {
  state: ProbeState;
  received: string[];
}

function withReceived(detail: string, round: Round): string {
  return round.received.length === 0 ? detail : `${detail}; received ${round.received.join(', ')}`;
}

async function checkRound(target: CheckTarget, generationPath: GenerationPath, round: Round): Promise<CheckOutcome> {
  const { profile } = target;
  // Both GETs at once: the model list is only read once health passes, but asking in the same round trip
  // saves one exchange between "able to serve" and "reported ready".
  const [health, models] = await Promise.all([
    call(target, profile.healthPath, profile.healthProbeTimeoutMs ?? HEALTH_PROBE_TIMEOUT_MS),
    target.verify ? call(target, profile.modelsPath, HEALTH_PROBE_TIMEOUT_MS) : undefined,
  ]);
  if (health.kind === 'no-answer') {
    return health.permanent
      ? { type: 'wrong', check: 'unreachable', detail: health.detail }
      : { type: 'not-ready', state: 'waiting for server', detail: health.detail };
  }
  const dead = deadEngineDetail(health.answer, profile);
  if (dead) return { type: 'wrong', check: 'engine-dead', detail: dead };
  round.state = 'waiting for health';
  const healthVerdict = classifyHealth(health.answer, profile.healthTextPattern, profile.healthPath);
  if (healthVerdict.state === 'wrong') return { type: 'wrong', check: 'health', detail: healthVerdict.detail };
  if (healthVerdict.state !== 'ready') return { type: 'not-ready', state: 'waiting for health', detail: healthVerdict.detail };
  if (!models) return { type: 'ready', ...(target.model && { model: target.model }) };
  round.received.push(`${profile.healthPath} ${health.answer.status}`);
  round.state = 'checking models';
  if (models.kind === 'no-answer') return { type: 'not-ready', state: 'checking models', detail: `${profile.modelsPath}: ${models.detail}` };
  const modelsVerdict = classifyModels(models.answer, profile.modelsPath);
  if (modelsVerdict.state === 'wrong') return { type: 'wrong', check: 'models', detail: modelsVerdict.detail };
  if (modelsVerdict.state !== 'ready') return { type: 'not-ready', state: 'checking models', detail: modelsVerdict.detail };
  round.received.push(`${profile.modelsPath} listing ${modelsVerdict.detail}`);
  round.state = 'checking generation';
  const model = target.model ?? modelsVerdict.detail;
  target.onCheck?.(round.state, withReceived(`${generationPath} sent, no answer yet`, round));
  const outcome = await generate(target, model, generationPath);
  return outcome.type === 'not-ready' ? { ...outcome, detail: withReceived(outcome.detail, round) } : outcome;
}

/** POST /v1/completions with max_tokens 1; chat-only servers answer 4xx there, so /v1/chat/completions is tried next. */
async function generate(target: CheckTarget, model: string, path: GenerationPath): Promise<CheckOutcome> {
  const first = await generateAt(target, model, path);
  if (first.state === 'wrong' && path === '/v1/completions') {
    const chat = await generateAt(target, model, '/v1/chat/completions');
    if (chat.state === 'wrong') return { type: 'wrong', check: 'generation', detail: `${first.detail}; ${chat.detail}` };
    // Remembered: the next rounds ask the chat endpoint directly.
    return outcomeOf(chat, model, '/v1/chat/completions');
  }
  if (first.state === 'wrong') return { type: 'wrong', check: 'generation', detail: first.detail };
  return outcomeOf(first, model);
}

function outcomeOf(verdict: Verdict, model: string, generationPath?: GenerationPath): CheckOutcome {
  const path = generationPath && { generationPath };
  return verdict.state === 'ready' ? { type: 'ready', model, ...path } : { type: 'not-ready', state: 'checking generation', detail: verdict.detail, ...path };
}

async function generateAt(target: CheckTarget, model: string, path: GenerationPath): Promise<Verdict> {
  const body =
    path === '/v1/completions'
      ? { model, prompt: 'Hi', max_tokens: 1, temperature: 0 }
      : { model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1, temperature: 0 };
  const outcome = await call(target, path, GENERATION_PROBE_TIMEOUT_MS, body);
  if (outcome.kind === 'no-answer') return { state: 'not-ready', detail: `${path}: ${outcome.detail}` };
  const verdict = classifyGeneration(outcome.answer, path);
  return verdict.state === 'not-ready' ? { state: 'not-ready', detail: `${path} ${verdict.detail}` } : verdict;
}

/** A probe whose own timeout was cut short by the overall deadline says nothing new about the server. */
async function call(target: CheckTarget, path: string, timeoutMs: number, json?: unknown) {
  const allowedMs = Math.min(timeoutMs, Math.max(1, target.deadline - performance.now()));
  const outcome = await probe(`${target.baseUrl}${path}`, { timeoutMs: allowedMs, signal: target.signal, ...(json !== undefined && { method: 'POST', json }) });
  if (outcome.kind === 'no-answer' && allowedMs < timeoutMs && performance.now() >= target.deadline) throw new DeadlineReached(`${path}: ${outcome.detail}`);
  return outcome;
}

class DeadlineReached extends Error {
  constructor(readonly detail: string) {
    super('deadline reached');
  }
}
