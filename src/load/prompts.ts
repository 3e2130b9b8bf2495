import { readFileSync } from 'node:fs';
import { UserError, messageOf } from '../util/errors.js';
import { mulberry32 } from '../util/random.js';
import { sampleLength } from './random.js';
import type { TokenCounter } from './tokenizer.js';
import { jsonErrorOffset } from './json-position.js';
import type { PromptSource } from './types.js';

export interface PromptItem {
  prompt: string;
  /** Prompt length in tokens: exact for synthetic prompts, tokenizer-counted or estimated for datasets. */
  inputTokens: number;
  /** max_tokens sent with the request. */
  maxTokens: number;
}

/** JSONL prompts without their own output length get this many tokens. */
export const DEFAULT_JSONL_OUTPUT_TOKENS = 256;

/**
 * Short common words: each is a single token in the BPE vocabularies of common LLM families, so a synthetic prompt
 * of N words is close to N tokens without needing the model's tokenizer.
 */
const WORDS = (
  'the of and to in is that for it as was with be by on not he this are or his from at which but have an they you ' +
  'were her she there one all we their has been if more when will would who so no out up into do time only new some ' +
  'could these two may first then any like other than its now over such our man me even most made after also did'
).split(' ');

/** Make exactly `count` prompts (cycling through a dataset when it is shorter). */
export function loadPrompts(source: PromptSource, count: number, tokenizer?: TokenCounter): PromptItem[] {
  const pool = source.kind === 'synthetic' ? syntheticPrompts(source, count) : source.kind === 'sharegpt' ? shareGptPrompts(source, tokenizer) : jsonlPrompts(source, tokenizer);
  if (pool.length === 0) throw new UserError(`dataset ${(source as { path: string }).path} holds no usable prompts`, 'check the file has prompts in the stated format');
  return Array.from({ length: count }, (_, index) => pool[index % pool.length]!);
}

/** Words a salt puts in front of every prompt: a first token no other salt is likely to share (100^4 choices). */
const SALT_WORDS = 4;

/**
 * The same prompts, each opened by words derived from `salt`: prompts of different salts share no prefix, so a
 * server's prefix/prompt cache cannot carry over between them, while equal salts give identical prompts.
 */
export function saltPrompts(items: readonly PromptItem[], salt: number): PromptItem[] {
  const random = mulberry32(salt);
  const opening = Array.from({ length: SALT_WORDS }, () => WORDS[Math.floor(random() * WORDS.length)]!).join(' ');
  return items.map((item) => ({ ...item, prompt: `${opening} ${item.prompt}`, inputTokens: item.inputTokens + SALT_WORDS }));
}

function syntheticPrompts(source: Extract<PromptSource, { kind: 'synthetic' }>, count: number): PromptItem[] {
  const random = mulberry32(source.seed);
  return Array.from({ length: count }, () => {
    const inputTokens = sampleLength(source.inputTokens, random);
    const maxTokens = sampleLength(source.outputTokens, random);
    const words = new Array<string>(inputTokens);
    for (let i = 0; i < inputTokens; i++) words[i] = WORDS[Math.floor(random() * WORDS.length)]!;
    return { prompt: words.join(' '), inputTokens, maxTokens };
  });
}

/** Token count of dataset text: the tokenizer's, else a 4-characters-per-token estimate. */
function estimateTokens(text: string, tokenizer?: TokenCounter): number {
  return Math.max(1, tokenizer ? tokenizer.count(text) : Math.round(text.length / 4));
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(`cannot read dataset ${path}: ${messageOf(error)}`, 'check the --dataset path');
  }
}

/** 1-based line of a character offset. */
function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

interface ShareGptTurn {
  from?: unknown;
  value?: unknown;
}

/** ShareGPT: an array of {conversations: [{from: "human", value}, {from: "gpt", value}, ...]}; first exchange used. */
function shareGptPrompts(source: Extract<PromptSource, { kind: 'sharegpt' }>, tokenizer?: TokenCounter): PromptItem[] {
  const text = readText(source.path);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    const offset = jsonErrorOffset(text);
    const line = offset === undefined ? undefined : lineAt(text, offset);
    throw new UserError(`${source.path}${line ? `:${line}` : ''}: not valid JSON: ${messageOf(error)}`, 'fix the JSON or pass --dataset-format jsonl for line-delimited files');
  }
  if (!Array.isArray(data)) throw new UserError(`${source.path}:1: ShareGPT dataset must be a JSON array of conversations`, 'use a ShareGPT export ([{"conversations": [...]}, ...])');
  const items: PromptItem[] = [];
  data.forEach((entry: unknown, index) => {
    const conversations = (entry as { conversations?: unknown })?.conversations;
    if (!Array.isArray(conversations)) {
      throw new UserError(`${source.path}: entry [${index}]: missing "conversations" array`, 'each entry needs {"conversations": [{"from": "human", "value": ...}, ...]}');
    }
    const turns = conversations as ShareGptTurn[];
    if (turns.some((turn) => typeof turn?.value !== 'string')) {
      throw new UserError(`${source.path}: entry [${index}]: every turn needs a string "value"`, 'fix that entry of the dataset');
    }
    // Like vLLM's benchmark: conversations without a reply give no output length and are skipped.
    if (turns.length < 2) return;
    const prompt = turns[0]!.value as string;
    const reply = turns[1]!.value as string;
    const wanted = estimateTokens(reply, tokenizer);
    items.push({ prompt, inputTokens: estimateTokens(prompt, tokenizer), maxTokens: source.maxOutputTokens ? Math.min(wanted, source.maxOutputTokens) : wanted });
  });
  const random = mulberry32(source.seed);
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** JSONL: one {"prompt": "...", "max_tokens"?: N} object per line; blank lines are skipped. */
function jsonlPrompts(source: Extract<PromptSource, { kind: 'jsonl' }>, tokenizer?: TokenCounter): PromptItem[] {
  const items: PromptItem[] = [];
  readText(source.path)
    .split('\n')
    .forEach((raw, index) => {
      const line = raw.trim();
      if (line === '') return;
      const where = `${source.path}:${index + 1}`;
      let record: { prompt?: unknown; max_tokens?: unknown };
      try {
        record = JSON.parse(line);
      } catch (error) {
        throw new UserError(`${where}: not valid JSON: ${messageOf(error)}`, 'each line must be one JSON object like {"prompt": "...", "max_tokens": 128}');
      }
      if (typeof record?.prompt !== 'string') throw new UserError(`${where}: missing string field "prompt"`, 'each line must be one JSON object like {"prompt": "...", "max_tokens": 128}');
      const requested = record.max_tokens;
      if (requested !== undefined && !(Number.isInteger(requested) && (requested as number) > 0)) {
        throw new UserError(`${where}: "max_tokens" must be a positive integer`, 'fix or drop max_tokens on that line');
      }
      const wanted = (requested as number | undefined) ?? source.maxOutputTokens ?? DEFAULT_JSONL_OUTPUT_TOKENS;
      items.push({
        prompt: record.prompt,
        inputTokens: estimateTokens(record.prompt, tokenizer),
        maxTokens: source.maxOutputTokens ? Math.min(wanted, source.maxOutputTokens) : wanted,
      });
    });
  return items;
}
