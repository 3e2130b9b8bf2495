import { z } from 'zod';
import type { SimConfig } from './config.js';
import type { EngineStep, FinishReason } from './engine.js';
import { badRequest, checkContextLength, type GenerationJob, greedyPrompt, requestId, stepIds } from './job.js';
import { countTokens } from './text.js';

const GenerateBody = z.looseObject({
  text: z.union([z.string(), z.array(z.string()).length(1, { message: 'the simulator supports exactly one prompt per request' })]).optional(),
  input_ids: z.array(z.number().int()).min(1).optional(),
  sampling_params: z
    .looseObject({
      max_new_tokens: z.number().int().min(1).nullish(),
      ignore_eos: z.boolean().nullish(),
      temperature: z.number().nullish(),
      top_k: z.number().int().nullish(),
    })
    .nullish(),
  stream: z.boolean().nullish(),
});

/** SGLang's default max_new_tokens. */
const DEFAULT_MAX_NEW_TOKENS = 128;

/**
 * POST /generate, SGLang native API: every chunk carries the text so far (only the new text with SGLang's
 * --incremental-streaming-output) and meta_info. The speculative fields come with the final chunk only, as SGLang
 * fills them when the request finishes (python/sglang/srt/managers/tokenizer_manager.py
 * `_calculate_spec_decoding_metrics`): accept_rate = correct drafts / proposed drafts, where proposed = verify steps
 * x (speculative_num_draft_tokens - 1); accept_length = completion_tokens / verify steps (the prefill's token included).
 */
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
  const draftLength = config.decode.spec.draftTokens;
  const incremental = config.sglang.incrementalStreamingOutput;
  const id = requestId('');
  let text = '';
  const ids: number[] = [];
  // SGLang's /generate always answers output_ids: cumulative, or only the new ids with incremental output
  // (python/sglang/srt/managers/tokenizer_manager.py `_handle_batch_output`); the vLLM personality's server has no /generate.
  const withIds = config.engine === 'sglang' || config.engine === 'default';
  let verifySteps = 0;
  let correctDrafts = 0;
  let completionTokens = 0;

  const specInfo = (): object => {
    if (draftLength === 0 || verifySteps === 0) return {};
    const proposed = verifySteps * draftLength;
    return {
      spec_verify_ct: verifySteps,
      spec_accept_rate: correctDrafts / proposed,
      spec_accept_length: completionTokens / verifySteps,
      spec_num_correct_drafts: correctDrafts,
      spec_num_proposed_drafts: proposed,
    };
  };
  // cached_tokens as python/sglang/srt/managers/scheduler_output_processor_mixin.py sends it: req.cached_tokens, every chunk.
  const metaInfo = (finishReason: FinishReason | undefined, cachedTokens: number): object => ({
    id,
    finish_reason: finishReason === undefined ? null : finishReason === 'length' ? { type: 'length', length: maxTokens } : { type: 'stop', matched: 2 },
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    cached_tokens: cachedTokens,
    ...(finishReason === undefined ? {} : specInfo()),
  });

  return {
    params: {
      promptTokens,
      maxTokens,
      ignoreEos: body.sampling_params?.ignore_eos === true,
      greedyPrompt: greedyPrompt(body.input_ids ?? body.text, body.sampling_params ?? {}),
    },
    stream: body.stream === true,
    endsWithDone: true,
    openingEvents: () => [],
    stepEvents(step: EngineStep) {
      const added = step.tokens.map((token) => token.text).join('');
      text += added;
      if (step.index > 0) verifySteps += 1;
      correctDrafts += step.accepted;
      completionTokens = step.totalTokens;
      const newIds = stepIds(step);
      ids.push(...newIds);
      const outputIds = withIds ? { output_ids: incremental ? newIds : [...ids] } : {};
      return [{ text: incremental ? added : text, ...outputIds, meta_info: metaInfo(step.finishReason, step.cachedTokens), index: 0 }];
    },
    closingEvents: () => [],
    body: (outcome) => ({ text, ...(withIds && { output_ids: ids }), meta_info: metaInfo(outcome.finishReason, outcome.cachedTokens), index: 0 }),
  };
}
