import { z } from 'zod';
import type { SimConfig } from './config.js';
import type { EngineStep, GenerationOutcome } from './engine.js';
import { badRequest, checkContextLength, type GenerationJob, greedyPrompt, stepIds } from './job.js';
import { countTokens } from './text.js';

const CompletionBody = z.looseObject({
  prompt: z.union([z.string(), z.array(z.number().int()).min(1)]),
  /** -1 (llama.cpp's default) means "until EOS or the context is full". */
  n_predict: z.number().int().min(-1).nullish(),
  stream: z.boolean().nullish(),
  ignore_eos: z.boolean().nullish(),
  temperature: z.number().nullish(),
  top_k: z.number().int().nullish(),
  /** tools/server/README.md `return_tokens`: the generated token ids in `tokens` (else `tokens` stays empty). */
  return_tokens: z.boolean().nullish(),
});

const round = (value: number): number => Math.round(value * 1000) / 1000;

/** POST /completion, llama.cpp server native API. */
export function llamacppJob(raw: unknown, config: SimConfig): GenerationJob {
  const parsed = CompletionBody.safeParse(raw);
  if (!parsed.success) throw badRequest(parsed.error.issues[0]);
  const body = parsed.data;
  const promptTokens = typeof body.prompt === 'string' ? countTokens(body.prompt) : body.prompt.length;
  const requested = body.n_predict ?? -1;
  const maxTokens = requested === -1 || requested === 0 ? Math.max(1, config.decode.maxModelLen - promptTokens) : requested;
  checkContextLength(config, promptTokens, maxTokens);
  const specOn = config.decode.spec.draftTokens > 0;
  let text = '';
  const ids: number[] = [];
  // Only where the personality is llama.cpp's (or servelab's own, which speaks every protocol).
  const returnTokens = body.return_tokens === true && (config.engine === 'llamacpp' || config.engine === 'default');

  const final = (outcome: GenerationOutcome, content: string): object => ({
    content,
    ...(returnTokens && { tokens: content === '' ? [] : ids }),
    stop: true,
    model: config.model,
    tokens_predicted: outcome.completionTokens,
    tokens_evaluated: promptTokens,
    stop_type: outcome.finishReason === 'length' ? 'limit' : 'eos',
    stopped_eos: outcome.finishReason === 'stop',
    stopped_limit: outcome.finishReason === 'length',
    // tools/server/server.cpp result_timings: cache_n = prompt tokens reused from the slot's cache, prompt_n = evaluated.
    timings: {
      cache_n: outcome.cachedTokens,
      prompt_n: promptTokens - outcome.cachedTokens,
      prompt_ms: round(outcome.promptMs),
      prompt_per_token_ms: round(outcome.promptMs / Math.max(1, promptTokens)),
      prompt_per_second: outcome.promptMs > 0 ? round((promptTokens * 1000) / outcome.promptMs) : 0,
      predicted_n: outcome.completionTokens,
      predicted_ms: round(outcome.decodeMs),
      predicted_per_token_ms: round(outcome.decodeMs / Math.max(1, outcome.completionTokens)),
      predicted_per_second: outcome.decodeMs > 0 ? round((outcome.completionTokens * 1000) / outcome.decodeMs) : 0,
      ...(specOn ? { draft_n: outcome.draftTokens, draft_n_accepted: outcome.acceptedDraftTokens } : {}),
    },
  });

  return {
    params: { promptTokens, maxTokens, ignoreEos: body.ignore_eos === true, greedyPrompt: greedyPrompt(body.prompt, body) },
    stream: body.stream === true,
    endsWithDone: false,
    openingEvents: () => [],
    stepEvents(step: EngineStep) {
      const delta = step.tokens.map((token) => token.text).join('');
      text += delta;
      const added = stepIds(step);
      ids.push(...added);
      return [{ content: delta, ...(returnTokens && { tokens: added }), stop: false, id_slot: 0, index: 0 }];
    },
    // llama.cpp ends the stream with a content-less event carrying stop=true and the timings.
    closingEvents: (outcome) => [final(outcome, '')],
    body: (outcome) => final(outcome, text),
  };
}
