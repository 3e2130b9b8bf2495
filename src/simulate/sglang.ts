import { z } from 'zod';
import type { SimConfig } from './config.js';
import type { EngineStep, FinishReason } from './engine.js';
import { badRequest, checkContextLength, type GenerationJob, requestId } from './job.js';
import { countTokens } from './text.js';

const GenerateBody = z.looseObject({
  text: z.union([z.string(), z.array(z.string()).length(1, { message: 'the simulator supports exactly one prompt per request' })]).optional(),
  input_ids: z.array(z.number().int()).min(1).optional(),
  sampling_params: z.looseObject({ max_new_tokens: z.number().int().min(1).nullish(), ignore_eos: z.boolean().nullish() }).nullish(),
  stream: z.boolean().nullish(),
});

/** SGLang's default max_new_tokens. */
const DEFAULT_MAX_NEW_TOKENS = 128;

/** POST /generate, SGLang native API: every chunk carries the cumulative text and meta_info. */
export function sglangJob(raw: unknown, config: SimConfig): GenerationJob {
  const parsed = GenerateBody.refine((body) => body.text !== undefined || body.input_ids !== undefined, {
    message: 'either text or input_ids is required',
    path: ['text'],
  }).safeParse(raw);
  if (!parsed.success) throw badRequest(parsed.error.issues[0]);
  const body = parsed.data;
  const promptTokens = body.input_ids?.length ?? countTokens(typeof body.text === 'string' ? body.text : (body.text?.[0] ?? ''));
  const maxTokens = body.sampling_params?.max_new_tokens ?? DEFAULT_MAX_NEW_TOKENS;
  checkContextLength(config, promptTokens, maxTokens);
  const specOn = config.decode.spec.draftTokens > 0;
  const id = requestId('');
  let text = '';
  let decodeSteps = 0;
  let completionTokens = 0;

  const metaInfo = (finishReason: FinishReason | undefined): object => ({
    id,
    finish_reason: finishReason === undefined ? null : finishReason === 'length' ? { type: 'length', length: maxTokens } : { type: 'stop', matched: 2 },
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    cached_tokens: 0,
    // SGLang reports verification passes; tokens per pass excludes the prefill's token here, matching the model.
    ...(specOn ? { spec_verify_ct: decodeSteps, spec_accept_length: decodeSteps === 0 ? 0 : (completionTokens - 1) / decodeSteps } : {}),
  });

  return {
    params: { promptTokens, maxTokens, ignoreEos: body.sampling_params?.ignore_eos === true },
    stream: body.stream === true,
    endsWithDone: true,
    openingEvents: () => [],
    stepEvents(step: EngineStep) {
      text += step.tokens.map((token) => token.text).join('');
      decodeSteps = step.index;
      completionTokens = step.totalTokens;
      return [{ text, meta_info: metaInfo(step.finishReason), index: 0 }];
    },
    closingEvents: () => [],
    body: (outcome) => ({ text, meta_info: metaInfo(outcome.finishReason), index: 0 }),
  };
}
