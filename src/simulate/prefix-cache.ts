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
    const cached = text.length === 0 ? 0 : Math.min(promptTokens - 1, Math.floor((promptTokens * matchedChars) / text.length));
    this.queryTokens += promptTokens;
    this.hitTokens += Math.max(0, cached);
    return Math.max(0, cached);
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
  const fields = (body ?? {}) as Record<string, unknown>;
  if (fields.cache_prompt === false) return 0;
  const prompt = fields.prompt ?? fields.messages ?? fields.text ?? fields.input_ids ?? fields.inputs;
  if (prompt === undefined) return 0;
  return cache.lookup(typeof prompt === 'string' ? prompt : JSON.stringify(prompt), promptTokens);
}
