import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { Tiktoken } from 'js-tiktoken/lite';
import { messageOf, UserError } from '../../util/errors.js';
import type { ModelTokenizer } from './model.js';

/**
 * tiktoken-style vocabularies (`.tiktoken`: one `base64-token rank` line per token), run by js-tiktoken. The file
 * holds no pre-tokenizer split pattern, so it comes from the encoding the file name names (as tiktoken itself
 * pairs them); the patterns are js-tiktoken's own for those encodings.
 */
const GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const CONTRACTIONS = "'s|'S|'t|'T|'re|'rE|'Re|'RE|'ve|'vE|'Ve|'VE|'m|'M|'ll|'lL|'Ll|'LL|'d|'D";
const SPLIT_PATTERNS: Record<string, string> = {
  gpt2: GPT2_PATTERN,
  r50k_base: GPT2_PATTERN,
  p50k_base: GPT2_PATTERN,
  p50k_edit: GPT2_PATTERN,
  cl100k_base: `(${CONTRACTIONS})|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`,
  o200k_base:
    `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(${CONTRACTIONS})?|` +
    `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(${CONTRACTIONS})?|` +
    '\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+',
};
const ENCODINGS = Object.keys(SPLIT_PATTERNS);
const BASE64_TOKEN = /^[A-Za-z0-9+/]+={0,2}$/;

export function isTiktokenFile(path: string): boolean {
  return path.endsWith('.tiktoken');
}

/** The encoding a file name names (the longest match, so p50k_edit wins over nothing shorter). */
function encodingOf(path: string): string {
  const name = basename(path);
  const named = ENCODINGS.filter((encoding) => name.includes(encoding)).sort((a, b) => b.length - a.length)[0];
  if (!named) {
    throw new UserError(
      `cannot tell the split pattern of ${path}: a .tiktoken file does not hold it, and its name names no known encoding`,
      `name the file after the encoding it was built with, e.g. NAME-cl100k_base.tiktoken (one of ${ENCODINGS.join(', ')})`,
    );
  }
  return named;
}

/** js-tiktoken's compressed rank table from the `.tiktoken` lines: `! RANK TOKEN` per line. */
function rankTable(path: string, text: string): string {
  const rows: string[] = [];
  const singleBytes = new Set<number>();
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    const [token, rank, extra] = line.trim().split(/\s+/);
    if (extra !== undefined || !token || !BASE64_TOKEN.test(token) || !/^\d+$/.test(rank ?? '')) {
      throw new UserError(`${path} line ${index + 1} is not "BASE64-TOKEN RANK"`, 'pass a tiktoken vocabulary file (as tiktoken.load_tiktoken_bpe reads)');
    }
    rows.push(`! ${rank} ${token}`);
    const bytes = Buffer.from(token, 'base64');
    if (bytes.length === 1) singleBytes.add(bytes[0]!);
  });
  // Without every single byte, js-tiktoken encodes unknown bytes as a wrong id instead of failing: refuse the file.
  if (singleBytes.size < 256) {
    throw new UserError(
      `${path} lacks ${256 - singleBytes.size} of the 256 single-byte tokens, so some text has no encoding`,
      'pass a complete byte-level tiktoken vocabulary',
    );
  }
  return rows.join('\n');
}

/**
 * Load a `.tiktoken` vocabulary. Special-token text in a prompt is encoded as ordinary text (tiktoken's
 * `disallowed_special=()`), and no BOS is added: tiktoken encodings have none.
 */
export function loadTiktoken(path: string): ModelTokenizer {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(
      `cannot read tokenizer ${path}: ${messageOf(error)}`,
      'pass a .tiktoken vocabulary file, a Hugging Face tokenizer.json or a model directory',
    );
  }
  const tiktoken = new Tiktoken({ pat_str: SPLIT_PATTERNS[encodingOf(path)]!, special_tokens: {}, bpe_ranks: rankTable(path, text) });
  const encode = (input: string): number[] => tiktoken.encode(input, [], []);
  return {
    encode,
    count: (input) => encode(input).length,
    decode: (ids) => tiktoken.decode([...ids]),
    countPrompt: (input) => encode(input).length,
  };
}
