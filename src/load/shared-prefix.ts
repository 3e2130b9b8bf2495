/**
 * Shared-prefix prompts: `prefixes` long documents (or system prompts) × `questionsPerPrefix` short questions each,
 * one user message "document, blank line, question", as RAG and agent traffic load an engine's prefix cache. Pure.
 *
 * Order: round-robin over the prefixes (d1q1, d2q1, …, d1q2, d2q2, …), so each document's first request was sent
 * `prefixes` requests before its second: with concurrency at most `prefixes`, that first request has usually
 * finished — its prefix computed and cached — when the next one arrives. A server that caches every prefix then
 * hits each document on all uses but its first: the designed hit rate, per request `targetCachedTokens`
 * (0 on a document's first use, its prefix tokens after), which the level reports beside the achieved rate.
 * Each part of a run (warm-up, every level) gets documents of its own: no level finds another's prefixes cached.
 */
import { mulberry32 } from '../util/random.js';
import type { PromptMeasure } from './datasets/load.js';
import type { PromptItem } from './prompts.js';
import { sampleLength } from './random.js';
import type { SharedPrefixSource } from './types.js';
import { generatedTokens, textOfTokens } from './words.js';

export function sharedPrefixPrompts(source: SharedPrefixSource, parts: readonly number[], measure: PromptMeasure): PromptItem[] {
  const words = mulberry32(source.seed + 0x9e3779b9);
  const outputs = mulberry32(source.seed);
  const items: PromptItem[] = [];
  for (const part of parts) {
    for (let left = part; left > 0; ) {
      const prefixes = Array.from({ length: source.prefixes }, () => textOfTokens(source.prefixTokens, words, measure.tokenizer));
      for (let question = 0; question < source.questionsPerPrefix && left > 0; question++) {
        for (let prefix = 0; prefix < prefixes.length && left > 0; prefix++, left--) {
          const prompt = `${prefixes[prefix]}\n\n${textOfTokens(source.questionTokens, words, measure.tokenizer)}`;
          items.push({
            prompt,
            inputTokens: generatedTokens(prompt, source.prefixTokens + source.questionTokens, measure),
            maxTokens: sampleLength(source.outputTokens, outputs),
            targetCachedTokens: question === 0 ? 0 : source.prefixTokens,
          });
        }
      }
    }
  }
  return items;
}

/** The hit rate a server that caches every prefix reaches on one full set: (Q−1)/Q of the prefix's share of a prompt. */
export function designedHitRate(source: Pick<SharedPrefixSource, 'prefixTokens' | 'questionTokens' | 'questionsPerPrefix'>): number {
  const share = source.prefixTokens / (source.prefixTokens + source.questionTokens);
  return ((source.questionsPerPrefix - 1) / source.questionsPerPrefix) * share;
}
