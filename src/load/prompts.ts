import { UserError } from '../util/errors.js';
import { mulberry32 } from '../util/random.js';
import { datasetItems, type PromptMeasure, promptItem } from './datasets/load.js';
import { sampleLength } from './random.js';
import { sessionTurns } from './sessions.js';
import { sharedPrefixPrompts } from './shared-prefix.js';
import type { ChatMessage, ModelTokenizer } from './tokenizers/model.js';
import { traceItems } from './trace/prompts.js';
import type { PromptSource } from './types.js';
import { exactTokenText, randomWords, WORDS } from './words.js';

export interface PromptItem {
  /** The prompt as text endpoints get it (a multi-turn conversation flattened, by chat template when there is one). */
  prompt: string;
  /** The conversation for chat endpoints, when it is more than one user message. */
  messages?: ChatMessage[];
  /**
   * Prompt length in tokens as the server counts it: with --tokenizer, the model's count (chat template or BOS
   * included); without one, synthetic prompts count words and datasets estimate 4 characters per token.
   */
  inputTokens: number;
  /** max_tokens sent with the request. */
  maxTokens: number;
  /** Dataset category (e.g. code, math, chat): results are broken down by it. */
  category?: string;
  /** Trace replay: the scheduled arrival, ms from the level's start. */
  arrivalMs?: number;
  /**
   * Multi-turn sessions (load/sessions.ts): the turn's place (turn 0 = first) and the wait before it; `prompt` is
   * then only the human turn, sent with the conversation so far (load/session-loop.ts).
   */
  session?: { id: number; turn: number; thinkMs: number };
  /** Prompt tokens a big enough prefix cache would hold of this prompt (see RequestSample.targetCachedTokens). */
  targetCachedTokens?: number;
}

/** Make exactly `count` prompts (cycling through a dataset when it is shorter). */
export async function loadPrompts(source: PromptSource, count: number, measure: PromptMeasure = { chat: false }): Promise<PromptItem[]> {
  return loadPromptParts(source, [count], measure);
}

/**
 * Prompts for the parts of a run (as load/run.ts cuts them: each measured level, then the warm-ups), in that order. Sessions and shared prefixes are
 * built part by part, so no part starts in the middle of a conversation or finds another part's prefixes cached;
 * other sources are one stream cut into the parts.
 */
export async function loadPromptParts(source: PromptSource, parts: readonly number[], measure: PromptMeasure = { chat: false }): Promise<PromptItem[]> {
  if (source.kind === 'sessions') return sessionTurns(source, parts, measure);
  if (source.kind === 'shared-prefix') return sharedPrefixPrompts(source, parts, measure);
  const count = parts.reduce((total, part) => total + part, 0);
  const pool =
    source.kind === 'synthetic'
      ? syntheticPrompts(source, count, measure)
      : source.kind === 'trace'
        ? await traceItems(source, measure)
        : await datasetItems(source, measure);
  if (pool.length === 0)
    throw new UserError(`dataset ${(source as { path: string }).path} holds no usable prompts`, 'check the file has prompts in the stated format');
  return Array.from({ length: count }, (_, index) => pool[index % pool.length]!);
}

/** Words a salt puts in front of every prompt: a first token no other salt is likely to share (100^4 choices). */
const SALT_WORDS = 4;

/**
 * The same prompts, each opened by words derived from `salt`: prompts of different salts share no prefix, so a
 * server's prefix/prompt cache cannot carry over between them, while equal salts give identical prompts.
 */
export function saltPrompts(items: readonly PromptItem[], salt: number, tokenizer?: ModelTokenizer): PromptItem[] {
  const random = mulberry32(salt);
  const opening = Array.from({ length: SALT_WORDS }, () => WORDS[Math.floor(random() * WORDS.length)]!).join(' ');
  const added = tokenizer ? tokenizer.count(`${opening} `) : SALT_WORDS;
  return items.map((item) => {
    // A session's later turns follow its salted first turn: the conversation is salted once, at its start.
    if (item.session && item.session.turn > 0) return item;
    const [first, ...rest] = item.messages ?? [];
    return {
      ...item,
      prompt: `${opening} ${item.prompt}`,
      ...(first && { messages: [{ ...first, content: `${opening} ${first.content}` }, ...rest] }),
      inputTokens: item.inputTokens + added,
      // Every prompt of the run opens with the same salt: a shared prefix stays shared, the salt words with it.
      ...(item.targetCachedTokens !== undefined && item.targetCachedTokens > 0 && { targetCachedTokens: item.targetCachedTokens + added }),
    };
  });
}

/**
 * Synthetic prompts: N words, or with a tokenizer a text of exactly N of its tokens (the message content; the
 * recorded inputTokens adds what the server adds: chat template, BOS).
 */
function syntheticPrompts(source: Extract<PromptSource, { kind: 'synthetic' }>, count: number, measure: PromptMeasure): PromptItem[] {
  // Lengths and words draw from separate streams, so a seed gives the same lengths with or without a tokenizer.
  const lengthRandom = mulberry32(source.seed);
  const wordRandom = mulberry32(source.seed + 0x9e3779b9);
  return Array.from({ length: count }, () => {
    const inputTokens = sampleLength(source.inputTokens, lengthRandom);
    const maxTokens = sampleLength(source.outputTokens, lengthRandom);
    if (!measure.tokenizer) return { prompt: randomWords(inputTokens, wordRandom), inputTokens, maxTokens };
    return promptItem([{ role: 'user', content: exactTokenText(measure.tokenizer, inputTokens, wordRandom) }], maxTokens, measure);
  });
}
