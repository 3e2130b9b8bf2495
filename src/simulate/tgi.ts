import { z } from 'zod';
import type { SimConfig } from './config.js';
import type { EngineStep, FinishReason } from './engine.js';
import { badRequest, checkContextLength, type GenerationJob, greedyPrompt } from './job.js';
import { countTokens } from './text.js';

const GenerateBody = z.looseObject({
  inputs: z.string(),
  parameters: z
    .looseObject({
      max_new_tokens: z.number().int().min(1).nullish(),
      /** Not a TGI parameter; accepted so benchmarks can ask for exact lengths. */
      ignore_eos: z.boolean().nullish(),
      temperature: z.number().nullish(),
      top_k: z.number().int().nullish(),
      do_sample: z.boolean().nullish(),
    })
    .nullish(),
  stream: z.boolean().nullish(),
});

/** TGI's default max_new_tokens. */
const DEFAULT_MAX_NEW_TOKENS = 100;

const tgiFinishReason = (reason: FinishReason): string => (reason === 'length' ? 'length' : 'eos_token');

/** TGI-style body: `inputs` + `parameters`. Used by POST /generate_stream, and by POST /generate when the body has `inputs`. */
export function isTgiBody(raw: unknown): boolean {
  return typeof raw === 'object' && raw !== null && 'inputs' in raw;
}

/** One SSE event per token (TGI never batches tokens into one event); the last carries generated_text and details. */
export function tgiJob(raw: unknown, config: SimConfig, forceStream: boolean): GenerationJob {
  const parsed = GenerateBody.safeParse(raw);
  if (!parsed.success) throw badRequest(parsed.error.issues[0]);
  const body = parsed.data;
  const promptTokens = countTokens(body.inputs);
  const maxTokens = body.parameters?.max_new_tokens ?? DEFAULT_MAX_NEW_TOKENS;
  checkContextLength(config, promptTokens, maxTokens);
  let text = '';
  let tokenIndex = 0;
  return {
    params: {
      promptTokens,
      maxTokens,
      ignoreEos: body.parameters?.ignore_eos === true,
      // TGI decodes greedily unless do_sample is set (text-generation-inference docs: parameters.do_sample, default false).
      greedyPrompt: body.parameters?.do_sample === true ? undefined : greedyPrompt(body.inputs, body.parameters ?? {}, true),
    },
    stream: forceStream || body.stream === true,
    endsWithDone: false,
    openingEvents: () => [],
    stepEvents(step: EngineStep) {
      return step.tokens.map((token, position) => {
        text += token.text;
        tokenIndex += 1;
        const final = step.last && position === step.tokens.length - 1;
        return {
          index: tokenIndex,
          token: { id: token.id, text: token.text, logprob: -0.5, special: false },
          generated_text: final ? text : null,
          details: final
            ? { finish_reason: tgiFinishReason(step.finishReason ?? 'length'), generated_tokens: step.totalTokens, input_length: promptTokens, seed: null }
            : null,
          top_tokens: null,
        };
      });
    },
    closingEvents: () => [],
    body: (outcome) => ({
      generated_text: text,
      details: { finish_reason: tgiFinishReason(outcome.finishReason), generated_tokens: outcome.completionTokens, input_length: promptTokens, seed: null },
    }),
  };
}
