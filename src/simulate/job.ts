import { randomBytes } from 'node:crypto';
import type { SimConfig } from './config.js';
import type { EngineStep, GenerationOutcome, GenerationParams } from './engine.js';
import { HttpError } from './http.js';

/** One parsed generation request, plus how its protocol renders steps and results. */
export interface GenerationJob {
  params: GenerationParams;
  stream: boolean;
  /** SSE events sent right after the headers (e.g. the chat role chunk). */
  openingEvents(): object[];
  /** Called for every engine step (streamed or not); returns that step's SSE events. */
  stepEvents(step: EngineStep): object[];
  /** Events after the last step (e.g. OpenAI's usage chunk). */
  closingEvents(outcome: GenerationOutcome): object[];
  /** Whether the stream ends with `data: [DONE]`. */
  endsWithDone: boolean;
  /** Non-streaming response body. */
  body(outcome: GenerationOutcome): object;
  /** The answer's text so far (OpenAI protocols): cached with the prompt for a conversation's next turn. */
  answer?(): string;
}

export type JobFactory = (body: unknown, config: SimConfig) => GenerationJob;

export function requestId(prefix: string): string {
  return `${prefix}${randomBytes(12).toString('hex')}`;
}

/** vLLM's context-length check, so clients see the same 400 a real server gives. */
export function checkContextLength(config: SimConfig, promptTokens: number, maxTokens: number): void {
  if (promptTokens + maxTokens > config.decode.maxModelLen) {
    throw new HttpError(
      400,
      `This model's maximum context length is ${config.decode.maxModelLen} tokens. However, you requested ` +
        `${promptTokens + maxTokens} tokens (${promptTokens} in the messages, ${maxTokens} in the completion). ` +
        'Please reduce the length of the messages or completion.',
    );
  }
}

/** First zod issue as a one-line 400. */
export function badRequest(issue: { path: ReadonlyArray<PropertyKey>; message: string } | undefined): HttpError {
  const where = issue?.path.map(String).join('.') ?? '';
  return new HttpError(400, `${where ? `${where}: ` : ''}${issue?.message ?? 'invalid request'}`, 'BadRequestError', where || null);
}

/** Sampling fields as the request set them (each protocol names and nests them its own way). */
export interface Sampling {
  temperature?: number | null | undefined;
  top_k?: number | null | undefined;
}

/**
 * The prompt's key for GenerationParams.greedyPrompt when the request decodes greedily: temperature 0 or top-k 1,
 * or nothing set where the engine's default is greedy (TGI's do_sample false).
 */
export function greedyPrompt(prompt: unknown, sampling: Sampling, greedyByDefault = false): string | undefined {
  const greedy = sampling.temperature === 0 || sampling.top_k === 1 || (greedyByDefault && sampling.temperature == null && sampling.top_k == null);
  if (!greedy) return undefined;
  return typeof prompt === 'string' ? prompt : JSON.stringify(prompt);
}

/** Ids of a step's tokens (what token-id fields carry). */
export function stepIds(step: EngineStep): number[] {
  return step.tokens.map((token) => token.id);
}
