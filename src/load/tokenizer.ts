import { readFileSync } from 'node:fs';
import { UserError, messageOf } from '../util/errors.js';

/** Counts tokens of text locally, for servers that report no usage. */
export interface TokenCounter {
  count(text: string): number;
}

/**
 * Load a Hugging Face tokenizer.json. Only WordLevel models with a Whitespace / WhitespaceSplit pre-tokenizer are
 * supported: with those, every pre-tokenized piece is exactly one token (known word or unk), so counting needs no
 * vocabulary walk. BPE / Unigram / WordPiece need a merge implementation servelab does not have yet.
 */
export function loadTokenizer(path: string): TokenCounter {
  let parsed: { model?: { type?: string }; pre_tokenizer?: { type?: string } | null };
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UserError(`cannot read tokenizer ${path}: ${messageOf(error)}`, 'pass a Hugging Face tokenizer.json file');
  }
  const modelType = parsed.model?.type;
  if (modelType !== 'WordLevel') {
    throw new UserError(
      `tokenizer ${path}: model type ${modelType ?? '(none)'} is not supported; only WordLevel tokenizers are`,
      'drop --tokenizer to count streamed chunks, or use a server that reports usage (BPE support is not implemented yet)',
    );
  }
  const preTokenizer = parsed.pre_tokenizer?.type ?? 'WhitespaceSplit';
  // HF's Whitespace pre-tokenizer splits on \w+|[^\w\s]+; WhitespaceSplit only on whitespace.
  const pattern = preTokenizer === 'Whitespace' ? /\w+|[^\w\s]+/g : preTokenizer === 'WhitespaceSplit' ? /\S+/g : undefined;
  if (!pattern) {
    throw new UserError(`tokenizer ${path}: pre-tokenizer ${preTokenizer} is not supported`, 'use a WordLevel tokenizer with a Whitespace or WhitespaceSplit pre-tokenizer');
  }
  return {
    count(text: string): number {
      return text.match(pattern)?.length ?? 0;
    },
  };
}
