import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { messageOf, UserError } from '../../util/errors.js';
import { isTiktokenFile, loadTiktoken } from './tiktoken.js';

/** Counts tokens of text locally, for servers that report no usage. */
export interface TokenCounter {
  count(text: string): number;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** A served model's tokenizer: counting, encoding and (when the model has one) its chat template. */
export interface ModelTokenizer extends TokenCounter {
  /** Token ids of text as the model sees it inside a prompt (no BOS/EOS added). */
  encode(text: string): number[];
  decode(ids: readonly number[]): string;
  /** Prompt tokens a server counts for a raw completion prompt (special tokens such as BOS added). */
  countPrompt(text: string): number;
  /** The model's chat template rendered with a generation prompt, or undefined when the model has none. */
  renderChat?: (messages: readonly ChatMessage[]) => string;
}

interface TokenizerConfig {
  chat_template?: unknown;
  bos_token?: unknown;
  eos_token?: unknown;
  [key: string]: unknown;
}

function readJson(path: string, what: string): Record<string, unknown> {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch (error) {
    throw new UserError(`cannot read ${what} ${path}: ${messageOf(error)}`, 'pass a Hugging Face tokenizer.json file or a model directory holding one');
  }
}

/** A special token in tokenizer_config.json is a string or an AddedToken object ({content: ...}). */
function tokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  const content = (value as { content?: unknown } | null)?.content;
  return typeof content === 'string' ? content : undefined;
}

/** tokenizer_config.json holds one template string or a list of named templates; "default" is the chat one. */
function chatTemplateText(config: TokenizerConfig): string | undefined {
  const template = config.chat_template;
  if (typeof template === 'string') return template;
  if (Array.isArray(template)) {
    const named = template as Array<{ name?: unknown; template?: unknown }>;
    const chosen = named.find((entry) => entry?.name === 'default') ?? named[0];
    return typeof chosen?.template === 'string' ? chosen.template : undefined;
  }
  return undefined;
}

/** Where tokenizer.json and tokenizer_config.json are: a file path, or a model directory holding both. */
function locate(path: string): { tokenizerPath: string; configPath?: string } {
  let isDirectory: boolean;
  try {
    isDirectory = statSync(path).isDirectory();
  } catch (error) {
    throw new UserError(`cannot read tokenizer ${path}: ${messageOf(error)}`, 'pass a Hugging Face tokenizer.json file or a model directory holding one');
  }
  const directory = isDirectory ? path : join(path, '..');
  const tokenizerPath = isDirectory ? join(path, 'tokenizer.json') : path;
  if (!existsSync(tokenizerPath)) {
    throw new UserError(
      `model directory ${path} holds no tokenizer.json`,
      'pass the directory of a Hugging Face model (with tokenizer.json) or the tokenizer.json itself',
    );
  }
  const configPath = join(directory, 'tokenizer_config.json');
  return existsSync(configPath) ? { tokenizerPath, configPath } : { tokenizerPath };
}

/**
 * Load a Hugging Face tokenizer (BPE, Unigram, WordPiece, WordLevel: whatever @huggingface/tokenizers runs) from a
 * tokenizer.json or a model directory; the chat template comes from tokenizer_config.json next to it. A `.tiktoken`
 * vocabulary goes to js-tiktoken instead.
 */
export function loadTokenizer(path: string): ModelTokenizer {
  if (isTiktokenFile(path)) return loadTiktoken(path);
  const { tokenizerPath, configPath } = locate(path);
  const json = readJson(tokenizerPath, 'tokenizer');
  const config = (configPath ? readJson(configPath, 'tokenizer config') : {}) as TokenizerConfig;
  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(json, config);
  } catch (error) {
    throw new UserError(
      `tokenizer ${tokenizerPath} is not usable: ${messageOf(error)}`,
      'pass a tokenizer.json saved by Hugging Face tokenizers or transformers',
    );
  }
  const encode = (text: string): number[] => tokenizer.encode(text, { add_special_tokens: false }).ids;
  const model: ModelTokenizer = {
    encode,
    count: (text) => (text === '' ? 0 : encode(text).length),
    decode: (ids) => tokenizer.decode([...ids], { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
    countPrompt: (text) => tokenizer.encode(text, { add_special_tokens: true }).ids.length,
  };
  const templateText = chatTemplateText(config);
  if (templateText !== undefined) {
    let template: Template;
    try {
      template = new Template(templateText);
    } catch (error) {
      throw new UserError(`chat template of ${configPath} does not parse: ${messageOf(error)}`, 'fix chat_template in tokenizer_config.json or remove it');
    }
    const specials = { bos_token: tokenText(config.bos_token) ?? '', eos_token: tokenText(config.eos_token) ?? '' };
    model.renderChat = (messages) => {
      try {
        return template.render({ messages, add_generation_prompt: true, ...specials });
      } catch (error) {
        throw new UserError(
          `chat template of ${configPath} failed to render: ${messageOf(error)}`,
          'fix chat_template in tokenizer_config.json or use --backend openai-completions',
        );
      }
    };
  }
  return model;
}
