import type { BackendKind } from '../profiles/types.js';
import { buildTemplate, type EventTemplate, matchFrame, matchTemplate, type SlotPath } from './event-template.js';
import type { PromptItem } from './prompts.js';

/**
 * Per-backend wire format: the request to send and how to read one streamed SSE `data:` payload.
 * Parsers write into a per-request StreamState instead of returning objects, so a stream of thousands of
 * events allocates nothing beyond JSON.parse itself.
 */

export class StreamFormatError extends Error {}

export interface StreamState {
  /** Token-bearing events seen so far. */
  tokenEvents: number;
  /**
   * Words of the output text so far (runs of non-space, one split across events counted once): the least number of
   * tokens the text holds, since tokenizers split words at spaces. More words than events shows events that carried
   * several tokens.
   */
  words: number;
  /** The text so far ends inside a word. */
  inWord: boolean;
  /** Output text so far; collected only when a local tokenizer will need it. */
  text: string;
  collectText: boolean;
  /** Keep what the answer was (text, token ids, finish reason), for output comparison (see BackendRequestOptions.collectOutputs). */
  collectOutputs: boolean;
  /** Generated token ids, where the server gives them. */
  tokenIds?: number[];
  finishReason?: string;
  promptTokens?: number;
  completionTokens?: number;
  /** Prompt tokens the server found in its prefix cache, when it reports them (see readCachedTokens). */
  cachedTokens?: number;
  /** Speculative-decoding counters reported per request (llama.cpp timings, SGLang meta_info, vLLM metrics). */
  specDraftTokens?: number;
  specAcceptedTokens?: number;
  specVerifySteps?: number;
  /** Whose per-request counters those are, where it matters for naming their source (verify steps: SGLang or vLLM). */
  specEngine?: 'sglang' | 'vllm';
  /** The simulator's send timestamp (hrtime ns) of the latest event: ground truth for timing-error measurement. */
  simSentNs?: string;
  /** SGLang: the previous chunk's text (cumulative chunks extend it), and whether the chunks proved to carry only new text. */
  previousText: string;
  incrementalText?: boolean;
  done: boolean;
  /** The request's recurring event (see event-template.ts), once one was proven; and how many builds were tried. */
  template?: EventTemplate;
  templateBuilds: number;
}

export function newStreamState(collectText: boolean, collectOutputs = false): StreamState {
  return {
    tokenEvents: 0,
    words: 0,
    inWord: false,
    text: '',
    collectText: collectText || collectOutputs,
    collectOutputs,
    previousText: '',
    done: false,
    templateBuilds: 0,
  };
}

export interface BackendRequestOptions {
  model?: string;
  ignoreEos: boolean;
  /** false: ask llama.cpp not to reuse its cached prompt (`cache_prompt: false`); other servers ignore the field. */
  cachePrompt?: false;
  /**
   * Keep each answer (text, token ids, finish reason) and ask for its token ids the way the protocol's engine gives
   * them: vLLM's `return_token_ids`, llama.cpp's `return_tokens` (SGLang's /generate and TGI always send them).
   */
  collectOutputs?: boolean;
}

export interface Backend {
  path: string;
  body(item: PromptItem, options: BackendRequestOptions): string;
  /** Read one SSE data payload into `state`; returns true when it carried output text (a token-bearing event). */
  parse(data: string, state: StreamState): boolean;
  /**
   * Read the whole SSE frame of the request's recurring event starting at `pos` of received text, as `parse` would
   * read its payload (a token-bearing frame adds to `state.tokenEvents`); returns where it ends, or -1 when no such
   * frame starts there (the text then goes through the SSE parser).
   */
  readFrame?(text: string, pos: number, state: StreamState): number;
}

/** Whether `backend.readFrame` can read anything for this request yet (its recurring event was proven). */
export function readsFrames(state: StreamState): boolean {
  return state.template?.frameSegments !== undefined;
}

/** One SSE data payload as a JSON object; an error event fails the stream. */
function parseEvent(data: string, state: StreamState): Record<string, any> {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new StreamFormatError(`stream event is not JSON: ${data.slice(0, 80)}`);
  }
  if (typeof value !== 'object' || value === null) throw new StreamFormatError(`stream event is not a JSON object: ${data.slice(0, 80)}`);
  const record = value as Record<string, any>;
  if (record.error !== undefined && record.error !== null) {
    throw new StreamFormatError(`server sent an error event: ${JSON.stringify(record.error).slice(0, 200)}`);
  }
  noteSimSent(record, state);
  return record;
}

/** The simulator's send timestamp, when the event carries one (ground truth for bench/client-overhead). */
function noteSimSent(record: Record<string, any>, state: StreamState): void {
  const sentNs = record.servelab_sim?.sent_ns;
  if (sentNs !== undefined) state.simSentNs = String(sentNs);
}

/** parseEvent for streams that end with a `data: [DONE]` sentinel: that one marks the state done, no event. */
function parseEventOrDone(data: string, state: StreamState): Record<string, any> | undefined {
  if (data === '[DONE]') {
    state.done = true;
    return undefined;
  }
  return parseEvent(data, state);
}

const SIM_SENT: SlotPath = ['servelab_sim', 'sent_ns'];
/** A request whose first token events prove no template is parsed in full from then on. */
const MAX_TEMPLATE_BUILDS = 2;

/**
 * A backend whose token events repeat one shape (see event-template.ts): an event matching the request's template
 * is read from the template's record, anything else is parsed; the second token event builds the template, and from
 * then on readFrame reads whole frames of that event straight from the received text.
 * `read` is the backend's reading of one event's value and must depend on nothing but that value.
 */
function templated(slotPaths: readonly SlotPath[], read: (record: Record<string, any>, state: StreamState) => boolean): Pick<Backend, 'parse' | 'readFrame'> {
  const paths = [...slotPaths, SIM_SENT];
  return {
    parse(data, state) {
      const template = state.template;
      if (template && matchTemplate(template, data)) {
        noteSimSent(template.record, state);
        return read(template.record, state);
      }
      const record = parseEventOrDone(data, state);
      if (!record) return false;
      const tokenBearing = read(record, state);
      // From the second token event on: a proof costs one parse, which one- and two-token requests would not repay.
      if (tokenBearing && template === undefined && state.tokenEvents >= 2 && state.templateBuilds < MAX_TEMPLATE_BUILDS) {
        state.templateBuilds++;
        state.template = buildTemplate(data, record, paths);
      }
      return tokenBearing;
    },
    readFrame(text, pos, state) {
      const template = state.template;
      if (!template) return -1;
      const end = matchFrame(template, text, pos);
      if (end !== -1) {
        noteSimSent(template.record, state);
        read(template.record, state);
      }
      return end;
    },
  };
}

function addText(state: StreamState, text: unknown): boolean {
  if (typeof text !== 'string' || text.length === 0) return false;
  state.tokenEvents++;
  countWords(state, text);
  if (state.collectText) state.text += text;
  return true;
}

/** Adds the words `text` begins to `state.words` (see StreamState.words). */
function countWords(state: StreamState, text: string): void {
  let inWord = state.inWord;
  let words = state.words;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // ASCII white space, no-break and ideographic spaces.
    if (code === 32 || (code >= 9 && code <= 13) || code === 0xa0 || code === 0x3000) inWord = false;
    else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  state.inWord = inWord;
  state.words = words;
}

/** Appends the ids an event carries (a list of numbers), when outputs are kept. */
function addIds(state: StreamState, ids: unknown): void {
  if (!state.collectOutputs || !Array.isArray(ids)) return;
  const kept = (state.tokenIds ??= []);
  for (const id of ids) if (typeof id === 'number') kept.push(id);
}

function noteFinish(state: StreamState, reason: unknown): void {
  if (state.collectOutputs && typeof reason === 'string' && reason !== '') state.finishReason = reason;
}

function openAiUsage(record: Record<string, any>, state: StreamState): void {
  const usage = record.usage;
  if (usage && typeof usage === 'object') {
    if (typeof usage.prompt_tokens === 'number') state.promptTokens = usage.prompt_tokens;
    if (typeof usage.completion_tokens === 'number') state.completionTokens = usage.completion_tokens;
    // vLLM fills it with --enable-prompt-tokens-details (vllm/entrypoints/openai/protocol.py PromptTokenUsageInfo,
    // UsageInfo.prompt_tokens_details); SGLang's OpenAI server with --enable-cache-report.
    const details = usage.prompt_tokens_details;
    if (details && typeof details.cached_tokens === 'number') state.cachedTokens = details.cached_tokens;
  }
}

/**
 * vLLM's per-request speculative counts, with --per-request-spec-decode-metrics (vllm-project/vllm#48915, July
 * 2026): top-level `metrics.speculative_decoding` {num_spec_steps, num_draft_tokens, num_accepted_draft_tokens, …},
 * on the final usage chunk (choices: []) of a stream that asked for usage. Steps and drafts read as SGLang's.
 */
function readVllmSpecMetrics(record: Record<string, any>, state: StreamState): void {
  const spec = record.metrics?.speculative_decoding;
  if (!spec || typeof spec !== 'object') return;
  if (typeof spec.num_spec_steps !== 'number' || typeof spec.num_accepted_draft_tokens !== 'number') return;
  state.specEngine = 'vllm';
  state.specVerifySteps = spec.num_spec_steps;
  state.specAcceptedTokens = spec.num_accepted_draft_tokens;
  if (typeof spec.num_draft_tokens === 'number') state.specDraftTokens = spec.num_draft_tokens;
}

function openAiBody(extra: Record<string, unknown>, item: PromptItem, options: BackendRequestOptions): string {
  return JSON.stringify({
    ...(options.model ? { model: options.model } : {}),
    ...extra,
    max_tokens: item.maxTokens,
    temperature: 0,
    stream: true,
    stream_options: { include_usage: true },
    // vLLM/SGLang extension; servers that do not know it ignore it.
    ...(options.ignoreEos ? { ignore_eos: true } : {}),
    ...(options.cachePrompt === false && { cache_prompt: false }),
    ...(options.collectOutputs && { return_token_ids: true }),
  });
}

/** The OpenAI endpoints differ only in how the prompt is sent and where a choice carries its text. */
function openAiBackend(path: string, prompt: (item: PromptItem) => Record<string, unknown>, textOf: (choice: any) => unknown, textPaths: SlotPath[]): Backend {
  return {
    path,
    body: (item, options) => openAiBody(prompt(item), item, options),
    ...templated(textPaths, (record, state) => {
      openAiUsage(record, state);
      readVllmSpecMetrics(record, state);
      // llama.cpp's OpenAI-compatible stream carries the same `timings` (draft counts) on its final chunk.
      if (record.timings && typeof record.timings === 'object') readDraftTimings(record.timings, state);
      const choice = record.choices?.[0];
      if (state.collectOutputs && choice) {
        addIds(state, choice.token_ids);
        noteFinish(state, choice.finish_reason);
      }
      return addText(state, textOf(choice));
    }),
  };
}

const openAiCompletions = openAiBackend(
  '/v1/completions',
  (item) => ({ prompt: item.prompt }),
  (choice) => choice?.text,
  [['choices', 0, 'text']],
);

const openAiChat = openAiBackend(
  '/v1/chat/completions',
  (item) => ({ messages: item.messages ?? [{ role: 'user', content: item.prompt }] }),
  // Reasoning models stream their thinking as reasoning_content: those are output tokens too.
  (choice) => choice?.delta?.content || choice?.delta?.reasoning_content,
  [
    ['choices', 0, 'delta', 'content'],
    ['choices', 0, 'delta', 'reasoning_content'],
  ],
);

/**
 * SGLang's per-request draft counts (meta_info of the final chunk, python/sglang/srt/managers/tokenizer_manager.py
 * `_calculate_spec_decoding_metrics`), correct (accepted) drafts and proposed drafts, newest names first. Renamed
 * twice (the table in verl-project/verl#7543); from 0.5.12 the 0.5.11 names stay as aliases for a release
 * (sgl-project/sglang#24081), so the newest pair a server sends is read.
 */
const SGLANG_DRAFT_KEYS = [
  // >= 0.5.12 (sglang#24081: `correct` = drafts only, no bonus token).
  ['spec_num_correct_drafts', 'spec_num_proposed_drafts'],
  // 0.5.11 (sglang#23530).
  ['spec_accepted_drafts', 'spec_proposed_drafts'],
  // <= 0.5.10.post1.
  ['spec_accept_token_num', 'spec_draft_token_num'],
] as const;

function readSglangDrafts(meta: Record<string, unknown>, state: StreamState): void {
  for (const [correct, proposed] of SGLANG_DRAFT_KEYS) {
    if (typeof meta[correct] !== 'number') continue;
    state.specAcceptedTokens = meta[correct];
    if (typeof meta[proposed] === 'number') state.specDraftTokens = meta[proposed];
    return;
  }
}

/**
 * SGLang native /generate streams the cumulative text so far plus meta_info counters; with the server's
 * --incremental-streaming-output each chunk carries only its new text instead, and nothing in a chunk says which.
 * A chunk whose text does not extend the previous one proves incremental output for the rest of the request. The
 * first chunks of an incremental stream can look cumulative only when a chunk's text begins with the whole previous
 * one (a repeated token): that chunk then loses its first characters, or counts as no token event (one ITL gap fewer);
 * token counts still come from meta_info.completion_tokens.
 * The speculative counters come with the final chunk only, and only with --speculative-algorithm
 * (python/sglang/srt/managers/tokenizer_manager.py `_calculate_spec_decoding_metrics`).
 */
const sglang: Backend = {
  path: '/generate',
  body: (item, options) =>
    JSON.stringify({
      text: item.prompt,
      sampling_params: { max_new_tokens: item.maxTokens, temperature: 0, ...(options.ignoreEos ? { ignore_eos: true } : {}) },
      stream: true,
    }),
  parse(data, state) {
    const record = parseEventOrDone(data, state);
    if (!record) return false;
    const meta = record.meta_info;
    if (meta && typeof meta === 'object') {
      if (typeof meta.prompt_tokens === 'number') state.promptTokens = meta.prompt_tokens;
      if (typeof meta.completion_tokens === 'number') state.completionTokens = meta.completion_tokens;
      // python/sglang/srt/managers/scheduler_output_processor_mixin.py: meta_info "cached_tokens": req.cached_tokens.
      if (typeof meta.cached_tokens === 'number') state.cachedTokens = meta.cached_tokens;
      if (typeof meta.spec_verify_ct === 'number') {
        state.specEngine = 'sglang';
        state.specVerifySteps = meta.spec_verify_ct;
      }
      readSglangDrafts(meta, state);
      noteFinish(state, meta.finish_reason?.type);
    }
    const text = record.text;
    if (typeof text !== 'string' || text.length === 0) return false;
    const previous = state.previousText;
    state.previousText = text;
    const incremental = state.incrementalText === true || !text.startsWith(previous);
    // output_ids follow the text: the whole answer so far, or only the new ids with incremental output.
    if (state.collectOutputs && !incremental) state.tokenIds = [];
    addIds(state, record.output_ids);
    if (!incremental) return addText(state, text.slice(previous.length));
    state.incrementalText = true;
    return addText(state, text);
  },
};

/**
 * TGI /generate_stream: one event per token; the last carries details.generated_tokens. TGI itself has no
 * ignore_eos; it is sent for TGI-compatible servers that honour it (--no-ignore-eos if a server rejects it).
 */
const tgi: Backend = {
  path: '/generate_stream',
  body: (item, options) =>
    JSON.stringify({ inputs: item.prompt, parameters: { max_new_tokens: item.maxTokens, details: true, ...(options.ignoreEos ? { ignore_eos: true } : {}) } }),
  parse(data, state) {
    const record = parseEvent(data, state);
    const details = record.details;
    if (details && typeof details === 'object') {
      if (typeof details.generated_tokens === 'number') state.completionTokens = details.generated_tokens;
      if (Array.isArray(details.prefill) && details.prefill.length > 0) state.promptTokens = details.prefill.length;
      noteFinish(state, details.finish_reason);
    }
    if (typeof record.generated_text === 'string') state.done = true;
    const token = record.token;
    if (!token || token.special) return false;
    addIds(state, [token.id]);
    return addText(state, token.text);
  },
};

/**
 * llama.cpp's `timings` (tools/server/server.cpp result_timings::to_json): draft counts with speculative decoding,
 * and `cache_n`, the prompt tokens reused from the slot's cache.
 */
function readDraftTimings(timings: Record<string, unknown>, state: StreamState): void {
  if (typeof timings.cache_n === 'number') state.cachedTokens = timings.cache_n;
  if (typeof timings.draft_n === 'number') state.specDraftTokens = timings.draft_n;
  if (typeof timings.draft_n_accepted === 'number') state.specAcceptedTokens = timings.draft_n_accepted;
}

/** llama.cpp server /completion: `content` per event; the final `stop: true` event has counts and draft timings. */
const llamacpp: Backend = {
  path: '/completion',
  body: (item, options) =>
    JSON.stringify({
      prompt: item.prompt,
      n_predict: item.maxTokens,
      temperature: 0,
      stream: true,
      ...(options.ignoreEos ? { ignore_eos: true } : {}),
      ...(options.cachePrompt === false && { cache_prompt: false }),
      ...(options.collectOutputs && { return_tokens: true }),
    }),
  parse(data, state) {
    const record = parseEvent(data, state);
    addIds(state, record.tokens);
    if (record.stop === true) {
      state.done = true;
      // stop_type: "limit" is the length limit; "eos" and "word" (a stop string) end the answer.
      if (typeof record.stop_type === 'string') noteFinish(state, record.stop_type === 'limit' ? 'length' : 'stop');
      if (typeof record.tokens_predicted === 'number') state.completionTokens = record.tokens_predicted;
      if (typeof record.tokens_evaluated === 'number') state.promptTokens = record.tokens_evaluated;
      const timings = record.timings;
      if (timings && typeof timings === 'object') {
        if (typeof timings.predicted_n === 'number') state.completionTokens = timings.predicted_n;
        if (typeof timings.prompt_n === 'number' && state.promptTokens === undefined) state.promptTokens = timings.prompt_n;
        readDraftTimings(timings, state);
      }
    }
    return addText(state, record.content);
  },
};

export const BACKENDS: Record<BackendKind, Backend> = {
  'openai-completions': openAiCompletions,
  'openai-chat': openAiChat,
  sglang,
  tgi,
  llamacpp,
};

export const BACKEND_KINDS = Object.keys(BACKENDS) as BackendKind[];
