import { createHash } from 'node:crypto';

/** Chained block hashes kept at most; beyond that the cache starts over (enough for any test or demo). */
const MAX_BLOCKS = 1_000_000;

/**
 * A prefix cache like vLLM's or SGLang's: prompts are cut into fixed blocks, each identified by the hash of
 * everything up to its end, so a block hits only when the whole prefix before it is the same. Works on the prompt
 * text (the simulator has no tokenizer) and converts matched characters to tokens proportionally.
 */
export class PrefixCache {
  private readonly blocks = new Set<string>();
  /** Prompt tokens looked up, and those found cached (vLLM's prefix_cache_queries / prefix_cache_hits). */
  queryTokens = 0;
  hitTokens = 0;

  constructor(private readonly blockChars: number) {}

  /** Tokens of this prompt already cached; then caches its blocks. At least one token is always computed. */
  lookup(text: string, promptTokens: number): number {
    const matchedChars = this.store(text);
    const cached = text.length === 0 ? 0 : Math.min(promptTokens - 1, Math.floor((promptTokens * matchedChars) / text.length));
    this.queryTokens += promptTokens;
    this.hitTokens += Math.max(0, cached);
    return Math.max(0, cached);
  }

  /**
   * Caches the blocks of a finished request's prompt with its answer, as vLLM keeps a finished request's full
   * blocks, generated ones included (vllm/v1/core/kv_cache_manager.py, cache_blocks on every step): the next turn
   * of a conversation finds its whole history cached. Counts no query.
   */
  insert(text: string): void {
    this.store(text);
  }

  /** Adds every full block of `text`; returns how many leading characters were cached already. */
  private store(text: string): number {
    let chain = '';
    let matchedChars = 0;
    let matching = true;
    for (let end = this.blockChars; end <= text.length; end += this.blockChars) {
      chain = createHash('sha256')
        .update(chain)
        .update(text.slice(end - this.blockChars, end))
        .digest('hex');
      if (matching && this.blocks.has(chain)) matchedChars = end;
      else matching = false;
      if (this.blocks.size >= MAX_BLOCKS) this.blocks.clear();
      this.blocks.add(chain);
    }
    return matchedChars;
  }

  /** vLLM's POST /reset_prefix_cache, SGLang's POST /flush_cache. */
  clear(): void {
    this.blocks.clear();
  }
}

/**
 * Cached leading tokens of a request's prompt, whatever its protocol (OpenAI prompt or messages, SGLang text or
 * input_ids, TGI inputs); a llama.cpp request with `cache_prompt: false` neither uses nor fills the cache.
 */
export function cachedPrefixTokens(cache: PrefixCache, body: unknown, promptTokens: number): number {
  const key = promptKey(body);
  return key === undefined ? 0 : cache.lookup(key, promptTokens);
}

/**
 * After a request's answer: its prompt and answer cached as the next turn of the conversation will send them — a
 * chat answer as one more assistant message, a text prompt with the answer appended — so that turn hits them.
 */
export function cacheAnswer(cache: PrefixCache, body: unknown, answer: string): void {
  const fields = (body ?? {}) as Record<string, unknown>;
  if (fields.cache_prompt === false) return;
  if (Array.isArray(fields.messages)) {
    const key = JSON.stringify([...fields.messages, { role: 'assistant', content: answer }]);
    // Up to the end of the answer's message: the next turn's array continues with "," where this one closes.
    cache.insert(key.slice(0, -1));
  } else if (typeof fields.prompt === 'string') {
    cache.insert(fields.prompt + answer);
  }
}

/** The text a request's prompt is cached under, whatever its protocol; undefined when it uses no cache. */
function promptKey(body: unknown): string | undefined {
  const fields = (body ?? {}) as Record<string, unknown>;
  if (fields.cache_prompt === false) return undefined;
  const prompt = fields.prompt ?? fields.messages ?? fields.text ?? fields.input_ids ?? fields.inputs;
  if (prompt === undefined) return undefined;
  return typeof prompt === 'string' ? prompt : JSON.stringify(prompt);
}
