/**
 * Pure readings of HTTP answers during startup. Three outcomes: ready; not ready yet (keep polling); wrong — the
 * URL answers, but not like the server we wait for, so waiting longer cannot help and we stop at once.
 */
export type Verdict = { state: 'ready'; detail: string } | { state: 'not-ready'; detail: string } | { state: 'wrong'; detail: string };

export interface HttpAnswer {
  status: number;
  contentType?: string;
  body: string;
}

const HEALTHY_WORDS = new Set(['ok', 'healthy', 'ready', 'up', 'pass', 'serving', 'running']);

/** One-line, bounded excerpt of a body for messages. */
export function excerpt(body: string, max = 80): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

function isHtml(answer: HttpAnswer): boolean {
  return /text\/html/i.test(answer.contentType ?? '') || /^\s*</.test(answer.body);
}

function describeHtml(body: string): string {
  const title = /<title[^>]*>([^<]*)<\/title>/i.exec(body)?.[1];
  return title ? `an HTML page titled "${excerpt(title, 60)}"` : 'an HTML page';
}

/** The message inside an error body: {"error":{"message"}} (OpenAI, llama.cpp), {"error":"..."}, {"detail"}, {"message"}. */
function errorMessage(json: unknown): string | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const record = json as Record<string, unknown>;
  const error = record.error;
  if (typeof error === 'string') return error;
  if (typeof error === 'object' && error !== null && typeof (error as Record<string, unknown>).message === 'string') {
    return (error as Record<string, string>).message;
  }
  for (const key of ['message', 'detail', 'status']) if (typeof record[key] === 'string') return record[key] as string;
  return undefined;
}

/** A non-2xx answer: 5xx/408/429 mean "still starting", other 4xx mean we are asking the wrong thing. */
function classifyFailureStatus(answer: HttpAnswer, what: string): Verdict {
  const json = parseJson(answer.body);
  const said = errorMessage(json) ?? (isHtml(answer) ? describeHtml(answer.body) : excerpt(answer.body));
  const detail = said ? `${answer.status}: ${excerpt(said)}` : `${answer.status}`;
  if (answer.status >= 500 || answer.status === 408 || answer.status === 429) return { state: 'not-ready', detail };
  if (answer.status === 404) return { state: 'wrong', detail: `${what} answered 404 Not Found` };
  if (answer.status === 401 || answer.status === 403) {
    return { state: 'wrong', detail: `${what} answered ${answer.status}: the server wants an API key or other credentials` };
  }
  if (answer.status >= 300 && answer.status < 400) return { state: 'wrong', detail: `${what} answered a ${answer.status} redirect` };
  return { state: 'wrong', detail: `${what} answered ${detail}` };
}

/**
 * Health endpoint reading: HTTP status first, then the JSON `status` field where there is one, matched as a
 * whole word (so "not ok" is not ok). Plain text must be a bare healthy word or match the profile's pattern.
 */
export function classifyHealth(answer: HttpAnswer, healthTextPattern?: RegExp, what = 'health endpoint'): Verdict {
  if (answer.status < 200 || answer.status >= 300) return classifyFailureStatus(answer, what);
  const text = answer.body.trim();
  if (text === '') return { state: 'ready', detail: `${answer.status}, empty body` };
  const json = parseJson(text);
  if (json !== undefined) {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) {
      return { state: 'wrong', detail: `${what} answered JSON ${excerpt(text)} where an object was expected` };
    }
    const status = (json as Record<string, unknown>).status;
    if (typeof status === 'boolean') return status ? { state: 'ready', detail: 'status true' } : { state: 'not-ready', detail: 'status false' };
    if (typeof status === 'string') {
      return HEALTHY_WORDS.has(status.trim().toLowerCase())
        ? { state: 'ready', detail: `status "${status}"` }
        : { state: 'not-ready', detail: `status "${excerpt(status, 40)}"` };
    }
    const error = errorMessage(json);
    if (error) return { state: 'not-ready', detail: excerpt(error) };
    return { state: 'ready', detail: `${answer.status}, JSON without status` };
  }
  if (isHtml(answer)) return { state: 'wrong', detail: `${what} answered ${describeHtml(answer.body)}, not a health response` };
  if (HEALTHY_WORDS.has(text.toLowerCase()) || healthTextPattern?.test(text)) return { state: 'ready', detail: `"${excerpt(text, 40)}"` };
  return { state: 'wrong', detail: `${what} answered "${excerpt(text)}", not a health response` };
}

/** /v1/models: ready when it lists at least one model; the detail is the first model's id. */
export function classifyModels(answer: HttpAnswer, what = '/v1/models'): Verdict {
  if (answer.status < 200 || answer.status >= 300) return classifyFailureStatus(answer, what);
  if (isHtml(answer)) return { state: 'wrong', detail: `${what} answered ${describeHtml(answer.body)}, not an OpenAI model list` };
  const json = parseJson(answer.body) as { data?: unknown } | undefined;
  if (typeof json !== 'object' || json === null || !Array.isArray(json.data)) {
    return { state: 'wrong', detail: `${what} answered ${excerpt(answer.body) || 'an empty body'}, not an OpenAI model list ({"data": [...]})` };
  }
  const first = json.data.find((entry): entry is { id: string } => typeof (entry as { id?: unknown })?.id === 'string');
  return first ? { state: 'ready', detail: first.id } : { state: 'not-ready', detail: `${what} lists no model yet` };
}

/** The text of a completion's or chat answer's first choice, when it has one. */
function choiceText(choice: unknown): string | undefined {
  const record = choice as { text?: unknown; message?: { content?: unknown } } | null;
  const text = record?.text ?? record?.message?.content;
  return typeof text === 'string' ? text : undefined;
}

/**
 * A tiny completion: ready when it returns choices with a generated token. 404 is reported as wrong so the caller can
 * try the chat route. An answer of no token (`completion_tokens: 0`, or an empty text where no usage is given) proves
 * the route answers, not that the engine generates: not ready yet.
 */
export function classifyGeneration(answer: HttpAnswer, what: string): Verdict {
  if (answer.status < 200 || answer.status >= 300) return classifyFailureStatus(answer, what);
  const json = parseJson(answer.body) as { choices?: unknown; usage?: { completion_tokens?: unknown } } | undefined;
  if (typeof json !== 'object' || json === null || !Array.isArray(json.choices) || json.choices.length === 0) {
    return { state: 'wrong', detail: `${what} answered ${excerpt(answer.body) || 'an empty body'}, not a completion with choices` };
  }
  // Some servers answer 200 and report the failure inside: that is no generated token.
  const error = errorMessage(json);
  const failed = json.choices.some((choice) => (choice as { finish_reason?: unknown } | null)?.finish_reason === 'error');
  if (error !== undefined || failed) return { state: 'not-ready', detail: `answered 200 with an error: ${excerpt(error ?? answer.body)}` };
  const tokens = json.usage?.completion_tokens;
  const text = choiceText(json.choices[0]);
  if (tokens === 0 || (typeof tokens !== 'number' && text === '')) {
    return {
      state: 'not-ready',
      detail: `answered 200 with no token (text ${JSON.stringify(excerpt(text ?? '', 20))}, completion_tokens ${tokens ?? 'not given'})`,
    };
  }
  return { state: 'ready', detail: 'generated 1 token' };
}
