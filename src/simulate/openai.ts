import { z } from 'zod';
import type { SimConfig } from './config.js';
import type { EngineStep, FinishReason, GenerationOutcome } from './engine.js';
import { HttpError } from './http.js';
import { badRequest, checkContextLength, type GenerationJob, greedyPrompt, requestId, stepIds } from './job.js';
import { countTokens } from './text.js';

const CommonFields = {
  model: z.string().optional(),
  max_tokens: z.number().int().min(1).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  ignore_eos: z.boolean().nullish(),
  n: z.literal(1, { message: 'the simulator supports only n=1' }).nullish(),
  temperature: z.number().nullish(),
  top_k: z.number().int().nullish(),
  /** vLLM's extension (vllm/entrypoints/openai/protocol.py `return_token_ids`): each choice carries `token_ids`, per chunk the new ones. */
  return_token_ids: z.boolean().nullish(),
};

const CompletionBody = z.looseObject({
  ...CommonFields,
  prompt: z.union([
    z.string(),
    z.array(z.string()).length(1, { message: 'the simulator supports exactly one prompt per request' }),
    z.array(z.number().int()).min(1),
  ]),
});

const ContentPart = z.looseObject({ type: z.string(), text: z.string().optional() });
const ChatBody = z.looseObject({
  ...CommonFields,
  max_completion_tokens: z.number().int().min(1).nullish(),
  messages: z.array(z.looseObject({ role: z.string(), content: z.union([z.string(), z.array(ContentPart)]).nullish() })).min(1),
});

type Usage = { prompt_tokens: number; completion_tokens: number; total_tokens: number; prompt_tokens_details?: { cached_tokens: number } };

/**
 * With a prefix cache, usage says how many prompt tokens it served, as vLLM does with --enable-prompt-tokens-details
 * (vllm/entrypoints/openai/protocol.py UsageInfo.prompt_tokens_details, PromptTokenUsageInfo.cached_tokens).
 */
function usageOf(promptTokens: number, outcome: GenerationOutcome, config: SimConfig): Usage {
  const completionTokens = outcome.completionTokens;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
    ...(config.prefixCache.enabled && { prompt_tokens_details: { cached_tokens: outcome.cachedTokens } }),
  };
}

/**
 * vLLM's per-request speculative summary (vllm-project/vllm#48915, `--per-request-spec-decode-metrics summary`):
 * top-level `metrics.speculative_decoding`, on the body and on the final usage chunk of a stream.
 */
function vllmSpecMetrics(outcome: GenerationOutcome, config: SimConfig): object {
  const k = config.decode.spec.draftTokens;
  if (config.engine !== 'vllm' || !config.vllm.perRequestSpecDecodeMetrics || k === 0 || outcome.decodeSteps === 0) return {};
  const steps = outcome.decodeSteps;
  return {
    metrics: {
      speculative_decoding: {
        mean_acceptance_length: 1 + outcome.acceptedDraftTokens / steps,
        draft_acceptance_rate: outcome.draftTokens > 0 ? outcome.acceptedDraftTokens / outcome.draftTokens : 0,
        num_spec_steps: steps,
        num_accepted_draft_tokens: outcome.acceptedDraftTokens,
        num_draft_tokens: outcome.draftTokens,
        num_spec_tokens: k,
      },
    },
  };
}

function checkModel(requested: string | undefined, config: SimConfig): string {
  if (requested !== undefined && requested !== config.model) {
    throw new HttpError(404, `The model \`${requested}\` does not exist.`, 'NotFoundError', 'model');
  }
  return config.model;
}

function promptTokensOf(prompt: string | string[] | number[]): number {
  if (typeof prompt === 'string') return countTokens(prompt);
  if (typeof prompt[0] === 'number') return prompt.length;
  return countTokens(String(prompt[0]));
}

function messageTokens(messages: z.output<typeof ChatBody>['messages']): number {
  let tokens = 0;
  for (const message of messages) {
    const { content } = message;
    if (typeof content === 'string') tokens += countTokens(content);
    else for (const part of content ?? []) tokens += countTokens(part.text ?? '');
  }
  return tokens;
}

/** What /v1/completions and /v1/chat/completions render differently; the request handling is shared. */
interface Endpoint {
  idPrefix: string;
  chunkObject: string;
  bodyObject: string;
  /** Streamed before any token. */
  openingChoices: object[];
  deltaChoice(delta: string, finishReason: FinishReason | null): object;
  finalChoice(text: string, finishReason: FinishReason): object;
}

const COMPLETIONS: Endpoint = {
  idPrefix: 'cmpl-',
  chunkObject: 'text_completion',
  bodyObject: 'text_completion',
  openingChoices: [],
  deltaChoice: (delta, finishReason) => ({ index: 0, text: delta, logprobs: null, finish_reason: finishReason, stop_reason: null }),
  finalChoice: (text, finishReason) => ({ index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null }),
};

const CHAT_COMPLETIONS: Endpoint = {
  idPrefix: 'chatcmpl-',
  chunkObject: 'chat.completion.chunk',
  bodyObject: 'chat.completion',
  // Like vLLM: the role arrives first with empty content, before any token.
  openingChoices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }],
  deltaChoice: (delta, finishReason) => ({ index: 0, delta: { content: delta }, logprobs: null, finish_reason: finishReason }),
  finalChoice: (text, finishReason) => ({ index: 0, message: { role: 'assistant', content: text }, logprobs: null, finish_reason: finishReason }),
};

type CommonBody = z.output<z.ZodObject<typeof CommonFields>>;

function openAiJob(endpoint: Endpoint, body: CommonBody, prompt: unknown, promptTokens: number, maxTokens: number, config: SimConfig): GenerationJob {
  const model = checkModel(body.model, config);
  checkContextLength(config, promptTokens, maxTokens);
  const includeUsage = body.stream_options?.include_usage === true;
  const id = requestId(endpoint.idPrefix);
  const created = Math.floor(Date.now() / 1000);
  let text = '';
  const ids: number[] = [];
  // Only the vLLM personality (and servelab's own) knows the field; others ignore it as unknown.
  const returnIds = body.return_token_ids === true && (config.engine === 'vllm' || config.engine === 'default');
  const chunk = (choices: object[], usage?: Usage): object => ({
    id,
    object: endpoint.chunkObject,
    created,
    model,
    choices,
    ...(includeUsage ? { usage: usage ?? null } : {}),
  });
  return {
    params: { promptTokens, maxTokens, ignoreEos: body.ignore_eos === true, greedyPrompt: greedyPrompt(prompt, body) },
    stream: body.stream === true,
    endsWithDone: true,
    openingEvents: () => (endpoint.openingChoices.length > 0 ? [chunk(endpoint.openingChoices)] : []),
    stepEvents(step: EngineStep) {
      const delta = step.tokens.map((token) => token.text).join('');
      text += delta;
      const added = stepIds(step);
      ids.push(...added);
      const choice = endpoint.deltaChoice(delta, step.finishReason ?? null);
      return [chunk([returnIds ? { ...choice, token_ids: added } : choice])];
    },
    answer: () => text,
    closingEvents: (outcome: GenerationOutcome) =>
      includeUsage ? [{ ...chunk([], usageOf(promptTokens, outcome, config)), ...vllmSpecMetrics(outcome, config) }] : [],
    body: (outcome: GenerationOutcome) => ({
      id,
      object: endpoint.bodyObject,
      created,
      model,
      choices: [{ ...endpoint.finalChoice(text, outcome.finishReason), ...(returnIds && { token_ids: ids }) }],
      usage: usageOf(promptTokens, outcome, config),
      ...vllmSpecMetrics(outcome, config),
    }),
  };
}

/** POST /v1/completions */
export function completionJob(raw: unknown, config: SimConfig): GenerationJob {
  const parsed = CompletionBody.safeParse(raw);
  if (!parsed.success) throw badRequest(parsed.error.issues[0]);
  const body = parsed.data;
  return openAiJob(COMPLETIONS, body, body.prompt, promptTokensOf(body.prompt), body.max_tokens ?? config.decode.defaultMaxTokens, config);
}

/** POST /v1/chat/completions */
export function chatJob(raw: unknown, config: SimConfig): GenerationJob {
  const parsed = ChatBody.safeParse(raw);
  if (!parsed.success) throw badRequest(parsed.error.issues[0]);
  const body = parsed.data;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? config.decode.defaultMaxTokens;
  return openAiJob(CHAT_COMPLETIONS, body, body.messages, messageTokens(body.messages), maxTokens, config);
}
