/** The simulator's "tokenizer": one whitespace-separated word is one token. */
import type { Random } from '../util/random.js';

const VOCABULARY = (
  'the of and to in a is that for it as was with be by on not he this are or his from at which but have an they ' +
  'you were her she there been one all we their has would when if so no what up out about who them more into than ' +
  'model token server latency batch cache draft kernel tensor memory graph stream request queue decode prefill ' +
  'speed layer weight sample value signal result trial level metric report engine device thread socket buffer'
).split(' ');

export interface SimToken {
  id: number;
  /** Text including the leading space, so concatenating tokens gives the completion text. */
  text: string;
}

export function countTokens(text: string): number {
  const trimmed = text.trim();
  return trimmed === '' ? 0 : trimmed.split(/\s+/).length;
}

export const VOCABULARY_SIZE = VOCABULARY.length;

export function tokenOf(id: number): SimToken {
  return { id, text: ` ${VOCABULARY[id]!}` };
}

export function sampleToken(rng: Random): SimToken {
  return tokenOf(Math.floor(rng() * VOCABULARY.length));
}
