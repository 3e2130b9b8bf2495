import { request } from 'undici';
import type { ServerProfile } from '../profiles/types.js';
import { excerpt, type HttpAnswer } from './classify.js';

export type ProbeOutcome =
  | { kind: 'answer'; answer: HttpAnswer }
  /** No HTTP answer. `permanent`: retrying cannot help (the host name does not resolve). */
  | { kind: 'no-answer'; detail: string; permanent: boolean };

// Bodies we read are tiny; a server that sends megabytes to a health probe is answering something else anyway.
const MAX_BODY_CHARS = 64 * 1024;

/** One HTTP exchange with its own deadline; never throws for network trouble, only for an outer abort. */
export async function probe(url: string, options: { method?: 'GET' | 'POST'; json?: unknown; timeoutMs: number; signal?: AbortSignal }): Promise<ProbeOutcome> {
  const deadline = AbortSignal.timeout(Math.max(1, Math.ceil(options.timeoutMs)));
  const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
  try {
    const response = await request(url, {
      method: options.method ?? 'GET',
      signal,
      ...(options.json !== undefined && { body: JSON.stringify(options.json), headers: { 'content-type': 'application/json' } }),
    });
    const body = (await response.body.text()).slice(0, MAX_BODY_CHARS);
    const contentType = response.headers['content-type'];
    return { kind: 'answer', answer: { status: response.statusCode, body, ...(typeof contentType === 'string' && { contentType }) } };
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    return { kind: 'no-answer', ...describeNetworkError(error, options.timeoutMs) };
  }
}

function describeNetworkError(error: unknown, timeoutMs: number): { detail: string; permanent: boolean } {
  const code = (error as NodeJS.ErrnoException)?.code ?? ((error as Error)?.cause as NodeJS.ErrnoException | undefined)?.code;
  const name = (error as Error)?.name;
  if (name === 'TimeoutError' || name === 'AbortError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    return { detail: `no answer within ${Math.ceil(timeoutMs)} ms`, permanent: false };
  }
  switch (code) {
    case 'ECONNREFUSED':
      return { detail: 'connection refused: nothing listening yet', permanent: false };
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
    case 'EPIPE':
      return { detail: 'connection reset', permanent: false };
    case 'ENOTFOUND':
      return { detail: 'host name does not resolve', permanent: true };
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return { detail: `host unreachable (${code})`, permanent: false };
    default:
      return { detail: `${(error as Error)?.message ?? String(error)}${code ? ` (${code})` : ''}`, permanent: false };
  }
}

/** Health bodies that name a dead engine, whatever the profile (vLLM's EngineDeadError text, "engine is dead"). */
const ENGINE_DEAD_BODY = /EngineDeadError|engine (core )?(is )?dead/i;

/**
 * Whether a health answer says the engine died for good (the wait should fail at once, not poll on): a 503 from a
 * server whose 503 means dead (vLLM), or any 5xx whose body names a dead engine. Pure.
 */
export function deadEngineDetail(answer: HttpAnswer, profile: Pick<ServerProfile, 'healthUnavailable' | 'name'>): string | undefined {
  if (answer.status < 500) return undefined;
  if (ENGINE_DEAD_BODY.test(answer.body)) return `health answered ${answer.status} naming a dead engine: ${excerpt(answer.body, 120)}`;
  if (answer.status === 503 && profile.healthUnavailable === 'dead') {
    return `health answered 503: ${profile.name} answers that only when its engine has died (it refuses connections while loading)`;
  }
  return undefined;
}
