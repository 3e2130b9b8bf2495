import { type PromptMeasure, promptTokens } from './datasets/load.js';
import { textOfExactTokens } from './tokenizers/exact.js';
import type { ModelTokenizer } from './tokenizers/model.js';

/**
 * Short common words: each is a single token in the BPE vocabularies of common LLM families, so a synthetic prompt
 * of N words is close to N tokens without needing the model's tokenizer.
 */
export const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you ' +
  'were her she there one all we their has been if more when will would who so no out up into do time only new some ' +
  'could these two may first then any like other than its now over such our man me even most made after also did'
).split(' ');

/** `count` words drawn from WORDS, space-separated. */
export function randomWords(count: number, random: () => number): string {
  const words = new Array<string>(count);
  for (let i = 0; i < count; i++) words[i] = WORDS[Math.floor(random() * WORDS.length)]!;
  return words.join(' ');
}

/** Prompt text of exactly `tokens` tokens of the model's tokenizer, from random common words. */
export function exactTokenText(tokenizer: ModelTokenizer, tokens: number, random: () => number): string {
  let text = randomWords(tokens, random);
  // A word is at least one token in practice; a vocabulary that merges across spaces needs more words.
  while (tokenizer.count(text) <= tokens) text += ` ${randomWords(tokens, random)}`;
  return textOfExactTokens(tokenizer, text, tokens);
}

/** `tokens` tokens of text: that many words, or exactly that many of the tokenizer's tokens. */
export function textOfTokens(tokens: number, random: () => number, tokenizer?: ModelTokenizer): string {
  return tokenizer ? exactTokenText(tokenizer, tokens, random) : randomWords(tokens, random);
}

/**
 * Tokens of generated text as the server will count them: with a tokenizer its count (chat template, BOS), else the
 * number of words asked for (each of WORDS is one token in common vocabularies).
 */
export function generatedTokens(text: string, words: number, measure: PromptMeasure): number {
  return measure.tokenizer ? promptTokens(text, [{ role: 'user', content: text }], measure) : words;
}
