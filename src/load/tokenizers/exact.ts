import { UserError } from '../../util/errors.js';
import type { ModelTokenizer } from './model.js';

/** Rounds of cut-decode-re-encode before giving up: merges across the cut settle within a few. */
const MAX_ROUNDS = 32;

/**
 * Text that the tokenizer encodes to exactly `count` tokens, cut from `source` (which must encode to more).
 * Decoding a prefix of ids and re-encoding can merge or split tokens at the cut, so the cut is moved by the
 * difference until the round trip is exact; never an approximate length.
 */
export function textOfExactTokens(tokenizer: ModelTokenizer, source: string, count: number): string {
  const ids = tokenizer.encode(source);
  if (ids.length < count) throw new Error(`source text holds ${ids.length} tokens, fewer than ${count}`);
  // tokenizers.js gives no id for a word a WordLevel vocabulary lacks when its unk token is not registered.
  if (ids.some((id) => !Number.isInteger(id))) {
    throw new UserError(
      'this tokenizer has no id for some words of the synthetic prompts (and no usable unk token)',
      "use a dataset instead of synthetic prompts, or the model's full tokenizer.json",
    );
  }
  let cut = count;
  const tried = new Set<number>();
  for (let round = 0; round < MAX_ROUNDS && !tried.has(cut); round++) {
    tried.add(cut);
    const text = tokenizer.decode(ids.slice(0, cut));
    const length = tokenizer.count(text);
    if (length === count) return text;
    cut = Math.min(ids.length, Math.max(1, cut + count - length));
  }
  throw new UserError(
    `cannot make a prompt of exactly ${count} tokens with this tokenizer (its decode/encode round trip does not settle)`,
    'use a dataset instead of synthetic prompts, or another --input-len',
  );
}
