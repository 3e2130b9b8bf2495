import { UserError } from '../../util/errors.js';
import { mulberry32 } from '../../util/random.js';
import { jsonErrorOffset } from '../json-position.js';
import type { PromptItem } from '../prompts.js';
import { checkRequestTokens } from '../request-bounds.js';
import type { ChatMessage, ModelTokenizer } from '../tokenizers/model.js';
import { type LocatedRecord, readDatasetText, tableRecords, textRecords } from './records.js';
import type { DatasetFields, DatasetSource } from './types.js';

/** Records without their own output length get this many tokens. */
export const DEFAULT_OUTPUT_TOKENS = 256;

/** How prompts are measured: with the model's tokenizer when given, and as the chat endpoint will see them. */
export interface PromptMeasure {
  tokenizer?: ModelTokenizer;
  /** The backend sends chat messages (openai-chat): its prompt is the model's chat template applied. */
  chat: boolean;
  /** The model's context in tokens: a trace or dataset request that cannot fit it is refused (unset: servelab's cap). */
  contextTokens?: number;
}

/**
 * A dataset request within the model's context: its output always, its prompt when a tokenizer measured it (a
 * 4-characters-a-token estimate could refuse a prompt that fits; the server's own 400 then fails the trial).
 */
function checkedItem(item: PromptItem, where: string, measure: PromptMeasure): PromptItem {
  checkRequestTokens(where, measure.tokenizer ? item.inputTokens : 0, item.maxTokens, measure.contextTokens);
  return item;
}

/** Token count of text: the tokenizer's, else a 4-characters-per-token estimate. */
function textTokens(text: string, measure: PromptMeasure): number {
  return Math.max(1, measure.tokenizer ? measure.tokenizer.count(text) : Math.round(text.length / 4));
}

/** Conversation flattened for text endpoints: the chat template when the model has one, else role-labelled turns. */
function conversationText(messages: readonly ChatMessage[], tokenizer?: ModelTokenizer): string {
  if (messages.length === 1 && messages[0]!.role === 'user') return messages[0]!.content;
  if (tokenizer?.renderChat) return tokenizer.renderChat(messages);
  return `${messages
    .map((message) => `${message.role === 'assistant' ? 'Assistant' : message.role === 'system' ? 'System' : 'User'}: ${message.content}`)
    .join('\n\n')}\n\nAssistant:`;
}

/**
 * Prompt tokens the server will count: for chat, the rendered chat template (servers tokenize it without adding
 * BOS again); for text endpoints, the prompt with the tokenizer's special tokens (BOS) added, as vLLM does.
 * Without a chat template the chat count covers the message text only (an undercount the server's usage replaces).
 */
export function promptTokens(prompt: string, messages: readonly ChatMessage[], measure: PromptMeasure): number {
  const { tokenizer } = measure;
  if (!tokenizer) return textTokens(prompt, measure);
  if (measure.chat) {
    if (tokenizer.renderChat) return tokenizer.count(tokenizer.renderChat(messages));
    return Math.max(
      1,
      messages.reduce((sum, message) => sum + tokenizer.count(message.content), 0),
    );
  }
  return tokenizer.countPrompt(prompt);
}

export function promptItem(messages: ChatMessage[], outputTokens: number, measure: PromptMeasure, maxOutputTokens?: number, category?: string): PromptItem {
  const prompt = conversationText(messages, measure.tokenizer);
  const item: PromptItem = {
    prompt,
    inputTokens: promptTokens(prompt, messages, measure),
    maxTokens: maxOutputTokens ? Math.min(outputTokens, maxOutputTokens) : outputTokens,
  };
  if (messages.length > 1 || messages[0]!.role !== 'user') item.messages = messages;
  if (category !== undefined) item.category = category;
  return item;
}

export function shuffle<T>(items: T[], seed: number): T[] {
  const random = mulberry32(seed);
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

function fieldNames(fields: DatasetFields | undefined) {
  return {
    prompt: fields?.prompt ?? 'prompt',
    output: fields?.output ?? 'output',
    outputTokens: fields?.outputTokens ?? 'max_tokens',
    category: fields?.category ?? 'category',
    conversations: fields?.conversations ?? 'conversations',
  };
}

/** Optional category: a non-empty string or a number (labels like 3 are common in CSV/Parquet). */
function categoryOf(record: Record<string, unknown>, field: string, where: string): string | undefined {
  const value = record[field];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  throw new UserError(`${where}: field "${field}" (category) must be a string`, 'fix that record or map the category to another field');
}

/** A positive integer, also from CSV text ("128") and Parquet INT64 (bigint). */
function positiveIntegerOf(value: unknown): number | undefined {
  const number = typeof value === 'bigint' ? Number(value) : typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) && number > 0 ? number : undefined;
}

const ROLE_OF: Record<string, ChatMessage['role']> = {
  human: 'user',
  user: 'user',
  gpt: 'assistant',
  assistant: 'assistant',
  chatgpt: 'assistant',
  bard: 'assistant',
  bing: 'assistant',
  model: 'assistant',
  system: 'system',
};

/**
 * ShareGPT: a JSON array of {conversations: [{from, value}, ...], category?}. Every assistant turn becomes one
 * request carrying the conversation before it (multi-turn history, earlier replies as recorded) with that reply's
 * length as output; a conversation's requests stay in turn order, conversations are shuffled by seed.
 */
function shareGptItems(source: DatasetSource, measure: PromptMeasure): PromptItem[] {
  const conversations = shareGptConversations(source);
  const items: PromptItem[] = [];
  for (const { messages, category, where } of source.shuffle === false ? conversations : shuffle(conversations, source.seed ?? 0)) {
    messages.forEach((message, turnIndex) => {
      const history = messages.slice(0, turnIndex);
      // Like vLLM's benchmark: a reply with no user turn before it gives no request.
      if (message.role !== 'assistant' || !history.some((turn) => turn.role === 'user')) return;
      const item = promptItem(history, textTokens(message.content, measure), measure, source.maxOutputTokens, category);
      items.push(checkedItem(item, `${where} turn ${turnIndex}`, measure));
    });
  }
  return items;
}

/** The conversations of a ShareGPT file, in file order (errors located by entry and turn). */
export function shareGptConversations(
  source: Pick<DatasetSource, 'path' | 'fields'>,
): Array<{ messages: ChatMessage[]; category: string | undefined; where: string }> {
  const names = fieldNames(source.fields);
  const text = readDatasetText(source.path);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    const offset = jsonErrorOffset(text);
    const line = offset === undefined ? undefined : text.slice(0, offset).split('\n').length;
    throw new UserError(
      `${source.path}${line ? `:${line}` : ''}: not valid JSON: ${(error as Error).message}`,
      'fix the JSON or pass --dataset-format jsonl for line-delimited files',
    );
  }
  if (!Array.isArray(data))
    throw new UserError(`${source.path}:1: ShareGPT dataset must be a JSON array of conversations`, 'use a ShareGPT export ([{"conversations": [...]}, ...])');
  return data.map((entry: unknown, index) => {
    const where = `${source.path}: entry [${index}]`;
    const turns = (entry as Record<string, unknown> | null)?.[names.conversations];
    if (!Array.isArray(turns))
      throw new UserError(`${where}: missing "${names.conversations}" array`, 'each entry needs {"conversations": [{"from": "human", "value": ...}, ...]}');
    const messages = turns.map((turn: unknown, turnIndex): ChatMessage => {
      const { from, value } = (turn ?? {}) as { from?: unknown; value?: unknown };
      const role = typeof from === 'string' ? ROLE_OF[from.toLowerCase()] : undefined;
      if (typeof value !== 'string') throw new UserError(`${where} turn ${turnIndex}: field "value" must be a string`, 'fix that turn of the dataset');
      if (!role)
        throw new UserError(
          `${where} turn ${turnIndex}: field "from" must be one of human, gpt, system (got ${JSON.stringify(from)})`,
          'fix that turn of the dataset',
        );
      return { role, content: value };
    });
    return { messages, category: categoryOf(entry as Record<string, unknown>, names.category, where), where };
  });
}

/** A JSONL / CSV / Parquet record: prompt text, output length from an explicit count or a reference reply. */
function tableItem(located: LocatedRecord, source: DatasetSource, measure: PromptMeasure): PromptItem {
  const names = fieldNames(source.fields);
  const { where, record } = located;
  const prompt = record[names.prompt];
  if (typeof prompt !== 'string' || prompt === '')
    throw new UserError(
      `${where}: missing string field "${names.prompt}" (prompt)`,
      `give every record a non-empty "${names.prompt}", or map the prompt field (fields.prompt / --dataset-field prompt=NAME)`,
    );
  const requested = record[names.outputTokens];
  let outputTokens: number;
  if (requested !== undefined && requested !== null && requested !== '') {
    const parsed = positiveIntegerOf(requested);
    if (parsed === undefined)
      throw new UserError(
        `${where}: field "${names.outputTokens}" (output tokens) must be a positive integer, got ${JSON.stringify(typeof requested === 'bigint' ? String(requested) : requested)}`,
        'fix or drop it on that record',
      );
    outputTokens = parsed;
  } else if (typeof record[names.output] === 'string' && record[names.output] !== '') {
    outputTokens = textTokens(record[names.output] as string, measure);
  } else {
    outputTokens = source.maxOutputTokens ?? DEFAULT_OUTPUT_TOKENS;
  }
  return checkedItem(
    promptItem([{ role: 'user', content: prompt }], outputTokens, measure, source.maxOutputTokens, categoryOf(record, names.category, where)),
    where,
    measure,
  );
}

/**
 * Every record of a JSONL, CSV or ShareGPT dataset checked (fields present, lengths within the context), read at
 * once: an experiment file's datasets are checked as it loads, before any server starts. A Parquet file is read
 * asynchronously, so it is checked when the load client reads it.
 */
export function checkDatasetSync(source: DatasetSource, measure: PromptMeasure): void {
  if (source.kind === 'sharegpt') shareGptItems(source, measure);
  else if (source.kind !== 'parquet') for (const record of textRecords(source.kind, source.path)) tableItem(record, source, measure);
}

/** Every request a dataset file yields, in the order they are sent (shuffled by seed when asked). */
export async function datasetItems(source: DatasetSource, measure: PromptMeasure): Promise<PromptItem[]> {
  if (source.kind === 'sharegpt') return shareGptItems(source, measure);
  const items = (await tableRecords(source.kind, source.path)).map((record) => tableItem(record, source, measure));
  return source.shuffle ? shuffle(items, source.seed ?? 0) : items;
}
