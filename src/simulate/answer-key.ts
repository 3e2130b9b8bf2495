/**
 * `simulate --answer-key FILE`: a JSONL file of {prompt, answer} records. A greedy request whose prompt is one of them
 * is answered with that answer (src/simulate/output.ts), so quality.accuracy has a server that knows the sample set.
 */
import { readFileSync } from 'node:fs';
import { messageOf, UserError } from '../util/errors.js';

/** Prompt text → answer text. */
export type AnswerKey = ReadonlyMap<string, string>;

export function readAnswerKey(path: string): AnswerKey {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UserError(`cannot read the answer key ${path}: ${messageOf(error)}`, 'pass --answer-key a JSONL file of {"prompt": …, "answer": …} lines');
  }
  const key = new Map<string, string>();
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    let record: { prompt?: unknown; answer?: unknown };
    try {
      record = JSON.parse(line) as typeof record;
    } catch {
      throw new UserError(`${path}:${index + 1}: not valid JSON`, 'give the answer key one {"prompt": …, "answer": …} object per line');
    }
    const { prompt, answer } = record;
    if (typeof prompt !== 'string' || (typeof answer !== 'string' && typeof answer !== 'number')) {
      throw new UserError(
        `${path}:${index + 1}: expected a string "prompt" and an "answer"`,
        'give the answer key one {"prompt": …, "answer": …} object per line',
      );
    }
    key.set(prompt, String(answer));
  });
  return key;
}

/** The prompt's text as the key holds it: the prompt itself, or the last user message of a chat request (its JSON). */
export function answerOf(key: AnswerKey, promptKey: string): string | undefined {
  const direct = key.get(promptKey);
  if (direct !== undefined || !promptKey.startsWith('[')) return direct;
  try {
    const messages = JSON.parse(promptKey) as unknown;
    if (!Array.isArray(messages)) return undefined;
    const last = messages.findLast((message: { role?: unknown }) => message?.role === 'user') as { content?: unknown } | undefined;
    return typeof last?.content === 'string' ? key.get(last.content) : undefined;
  } catch {
    return undefined;
  }
}
