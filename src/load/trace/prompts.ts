import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { deriveSeed, mulberry32 } from '../../util/random.js';
import { type PromptMeasure, promptItem } from '../datasets/load.js';
import type { PromptItem } from '../prompts.js';
import { textOfExactTokens } from '../tokenizers/exact.js';
import { randomWords } from '../words.js';
import { readTrace, sentOutputTokens } from './parse.js';
import type { TraceRecord, TraceSource } from './types.js';

/** Tokens of one Mooncake hash block (kvcache-ai/Mooncake FAST25-release/README.md: "block hash" of 512 tokens). */
export const TRACE_BLOCK_TOKENS = 512;

/** Streams of deriveSeed: a hash block's words, a request's own words. Distinct so a block never equals a request's tail. */
const BLOCK_STREAM = 1;
const REQUEST_STREAM = 2;

/** The records of a trace inside its window, sorted by time (stable: equal times keep file order). */
export function windowed(records: readonly TraceRecord[], window: TraceSource['window']): TraceRecord[] {
  const sorted = [...records].sort((a, b) => a.timestampMs - b.timestampMs);
  if (!window || sorted.length === 0) return sorted;
  const first = sorted[0]!.timestampMs;
  return sorted.filter((record) => {
    const at = record.timestampMs - first;
    return at >= window.startMs && (window.endMs === undefined || at < window.endMs);
  });
}

/**
 * A trace's requests as prompts, each with its arrival (ms from the window's first request, divided by the speedup),
 * its recorded input length (exact with a tokenizer, else as many common words) and its recorded output length as
 * max_tokens (at least 1: a failed request of the trace still arrived). A Mooncake hash block's text is derived from
 * its id alone, so requests sharing leading hash_ids share their leading text and hit a prefix cache as they did in
 * production; tokens beyond the hash blocks (and every prompt of a trace without them) are the request's own.
 */
export async function traceItems(source: TraceSource, measure: PromptMeasure): Promise<PromptItem[]> {
  const records = windowed(readTrace(source.path, source.format, { ...source, ...measure }), source.window);
  if (records.length === 0)
    throw new UserError(
      `trace ${source.path} holds no requests${source.window ? ' in the window asked for' : ''}`,
      source.window ? 'widen the window (--trace-window / prompts.window) or leave it out' : 'check the file and --trace-format',
      // A window past the trace's end is a wrong setting (as asking for more requests than it holds is); an empty file is bad input.
      source.window ? ExitCode.usage : undefined,
    );
  const seed = source.seed ?? 0;
  const speedup = source.speedup ?? 1;
  const first = records[0]!.timestampMs;
  const blocks = new Map<number, string[]>();
  const blockWords = (id: number): string[] => {
    let words = blocks.get(id);
    if (!words) blocks.set(id, (words = randomWords(TRACE_BLOCK_TOKENS, mulberry32(deriveSeed(deriveSeed(seed, BLOCK_STREAM), id))).split(' ')));
    return words;
  };
  const seen = new Set<number>();
  return records.map((record, index) => {
    const targetCachedTokens = designedCachedTokens(record, seen);
    const own = mulberry32(deriveSeed(deriveSeed(seed, REQUEST_STREAM), index));
    const words = promptWords(record, blockWords, own, measure.tokenizer ? 1 : 0);
    const outputTokens = sentOutputTokens(record, source.maxOutputTokens);
    const arrivalMs = (record.timestampMs - first) / speedup;
    const { tokenizer } = measure;
    const item: PromptItem = tokenizer
      ? promptItem([{ role: 'user', content: exactText(tokenizer, words, record.inputTokens, own) }], outputTokens, measure)
      : { prompt: words.join(' '), inputTokens: record.inputTokens, maxTokens: outputTokens };
    // Every request of a trace with hash blocks counts toward the designed rate, those expecting no hit too.
    return { ...item, arrivalMs, ...(record.hashIds !== undefined && { targetCachedTokens }) };
  });
}

/**
 * Prompt tokens of `record` a big enough prefix cache holds when it arrives: its leading hash blocks that an earlier
 * request of the window sent (a Mooncake block id is a hash of its whole prefix, so the run of seen ids from the start). The trace's designed hit rate, shown beside the achieved one and allowed to a cold trial.
 */
function designedCachedTokens(record: TraceRecord, seen: Set<number>): number {
  const ids = record.hashIds ?? [];
  let shared = 0;
  // Whole blocks only (the last one is usually cut short), and never the last prompt token: an engine computes it.
  while (shared < ids.length && (shared + 1) * TRACE_BLOCK_TOKENS <= record.inputTokens && seen.has(ids[shared]!)) shared++;
  for (const id of ids) seen.add(id);
  return Math.min(record.inputTokens - 1, shared * TRACE_BLOCK_TOKENS);
}

/**
 * One word per input token: the hash blocks' words first (the last block cut to what is left), then the request's
 * own; `extra` more own words so a tokenizer has text to cut from.
 */
function promptWords(record: TraceRecord, blockWords: (id: number) => string[], own: () => number, extra: number): string[] {
  const words: string[] = [];
  for (const id of record.hashIds ?? []) {
    const left = record.inputTokens - words.length;
    if (left <= 0) break;
    const block = blockWords(id);
    for (let i = 0; i < Math.min(left, block.length); i++) words.push(block[i]!);
  }
  const rest = record.inputTokens - words.length + extra;
  // Not push(...): a prompt of 100k tokens would overflow the call stack.
  if (rest > 0) for (const word of randomWords(rest, own).split(' ')) words.push(word);
  return words;
}

/** The words cut to exactly `tokens` tokens at the end, so shared leading blocks stay identical. */
function exactText(tokenizer: NonNullable<PromptMeasure['tokenizer']>, words: string[], tokens: number, own: () => number): string {
  let text = words.join(' ');
  // A vocabulary that merges across spaces needs more words than tokens.
  while (tokenizer.count(text) <= tokens) text += ` ${randomWords(tokens, own)}`;
  return textOfExactTokens(tokenizer, text, tokens);
}
