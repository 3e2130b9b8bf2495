import { StringDecoder } from 'node:string_decoder';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Client, type Dispatcher } from 'undici';
import { tokenizerTolerance } from '../metrics/summary.js';
import { formatSeconds } from '../util/format.js';
import { type Backend, type BackendRequestOptions, newStreamState, readsFrames, StreamFormatError, type StreamState } from './backends.js';
import { closedAfterServing } from './connections.js';
import type { GroundTruthErrors } from './ground-truth.js';
import type { PromptItem } from './prompts.js';
import type { TokenCounter } from './tokenizers/model.js';
import type { RequestErrorKind, RequestSample, TokenCountDisagreement, TokenCountMethod, TokenCountSource } from './types.js';

/** Everything a request needs that is shared by all requests of a run (one connection pool, one backend). */
export interface RequestContext {
  dispatcher: Dispatcher;
  origin: string;
  /** Path prefix of the base URL (e.g. "/proxy"), prepended to the backend path. */
  pathPrefix: string;
  backend: Backend;
  backendOptions: BackendRequestOptions;
  /** Idle timeout: time without any response bytes before the request fails as a stall. */
  requestTimeoutMs: number;
  /** How the timeout is set where the user set it (`--request-timeout`, `client.requestTimeout`), for its messages. */
  requestTimeoutSetting?: string;
  tokenizer?: TokenCounter;
  /** The output-token count to use; unset: usage, else tokenizer, else counted events (see TokenCountSource). */
  tokenCounts?: TokenCountSource;
  signal?: AbortSignal;
  /** false: `Connection: close` on every request (see ClientOptions.keepAlive). */
  keepAlive?: false;
  /** Keep each answer's text (multi-turn sessions send it back with the next turn). */
  collectText?: boolean;
  /** Called at each token-bearing event: live throughput, and (for bench/) ground-truth comparison. */
  onTokenEvent?: (arrivalMs: number, state: StreamState) => void;
}

export interface RequestOutcome {
  sample: RequestSample;
  tokenCountMethod: TokenCountMethod;
  state: StreamState;
  /** bench/ only (a load worker started with groundTruth): timing errors against the simulator's send times. */
  groundTruth?: GroundTruthErrors;
}

class AbortedError extends Error {}

const MAX_ERROR_BODY = 500;
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'text/event-stream' };

/**
 * performance.now() and process.hrtime share one monotonic clock in Node and differ by a constant; adding it once
 * gives CLOCK_MONOTONIC ms (comparable with the simulator's sent_ns) without a BigInt allocation per chunk.
 */
const HRTIME_OFFSET_MS = measureHrtimeOffset();

/** Bracket performance.now() between two hrtime reads, keeping the tightest of several tries (the first calls are slow). */
function measureHrtimeOffset(): number {
  let best = { width: Number.POSITIVE_INFINITY, offset: 0 };
  for (let i = 0; i < 50; i++) {
    const before = Number(process.hrtime.bigint()) / 1e6;
    const now = performance.now();
    const after = Number(process.hrtime.bigint()) / 1e6;
    if (after - before < best.width) best = { width: after - before, offset: (before + after) / 2 - now };
  }
  return best.offset;
}

/** Monotonic clock in ms on process.hrtime's epoch. */
export function nowMs(): number {
  return performance.now() + HRTIME_OFFSET_MS;
}

/** When an open loop sent the request: how late against its schedule, and whether the in-flight cap held it back. */
export interface Arrival {
  lateMs: number;
  waitedForSlot: boolean;
}

/**
 * Send one streaming generation request and time it. Arrival time is taken in the dispatcher's body-data callback
 * and shared by every event of that network chunk; SSE/JSON parsing runs later in the same event-loop turn (see
 * deferToCheckPhase), so no chunk's timestamp waits for another chunk's parsing. Timing rules:
 * TTFT = first token-bearing event; ITL = gaps between token-bearing events (an event carrying several tokens, as
 * speculative decoding produces, is one gap); TPOT = (e2e − ttft) / (outputTokens − 1); e2e ends at the end of the body.
 * TTFT and e2e count from the scheduled arrival (`arrival.lateMs` before the send) or from the first send, so
 * neither a client queue nor a resend is hidden. Never rejects: failures come back as `sample.error`.
 */
export function streamRequest(context: RequestContext, item: PromptItem, index: number, arrival?: Arrival): Promise<RequestOutcome> {
  const { backend, signal } = context;
  const state = newStreamState(context.tokenizer !== undefined || context.collectText === true, context.backendOptions.collectOutputs === true);
  const tokenTimes: number[] = [];
  let chunkArrival = 0;
  let formatError: Error | undefined;
  const tokenEvent = () => {
    tokenTimes.push(chunkArrival);
    context.onTokenEvent?.(chunkArrival, state);
  };
  const parser = createParser({
    onEvent(event: EventSourceMessage) {
      if (formatError || state.done) return;
      try {
        if (backend.parse(event.data, state)) tokenEvent();
      } catch (error) {
        formatError = error as Error;
      }
    },
    onError(error) {
      formatError ??= new StreamFormatError(`malformed SSE: ${error.message}`);
    },
  });
  // Whether everything fed to the parser so far ended with a blank line: only then may a frame be read around it.
  let atEventBoundary = true;
  const readFrame = backend.readFrame;
  /**
   * One received chunk: runs of the request's recurring frame are read straight from the text (most of a
   * saturated stream: no event splitting, no per-event callbacks); anything else goes through the SSE parser, one
   * event at a time once frames can be read, so that reading frames resumes right after it.
   */
  const readChunk = (text: string) => {
    let pos = 0;
    for (;;) {
      if (readFrame && atEventBoundary) {
        for (let end = 0; pos < text.length && !state.done; pos = end) {
          const events = state.tokenEvents;
          end = readFrame(text, pos, state);
          if (end === -1) break;
          if (state.tokenEvents !== events) tokenEvent();
        }
      }
      if (pos >= text.length || formatError) return;
      const blankLine = readsFrames(state) ? text.indexOf('\n\n', pos) : -1;
      const end = blankLine === -1 ? text.length : blankLine + 2;
      parser.feed(pos === 0 && end === text.length ? text : text.slice(pos, end));
      atEventBoundary = blankLine !== -1 || text.endsWith('\n\n');
      pos = end;
    }
  };
  const decoder = new StringDecoder('utf8');
  let sentAtMs = Date.now();
  let start = nowMs();
  const origin = start - Math.max(0, arrival?.lateMs ?? 0);
  let resent = false;

  return new Promise<RequestOutcome>((resolve) => {
    let controller: Dispatcher.DispatchController | undefined;
    let status = 0;
    let responded = false;
    let errorBody = '';
    let settled = false;
    let fresh: Client | undefined;

    // Chunks received but not yet parsed, with their arrival times.
    const unparsedText: string[] = [];
    const unparsedArrival: number[] = [];
    const parseReceived = () => {
      for (let i = 0; i < unparsedText.length && !formatError; i++) {
        chunkArrival = unparsedArrival[i]!;
        readChunk(unparsedText[i]!);
      }
      unparsedText.length = 0;
      unparsedArrival.length = 0;
      if (formatError && !settled) controller?.abort(formatError);
    };

    // A level that became invalid stops with its reason; Ctrl-C and a dead server abort without one of text.
    const abortedWhy = () => (typeof signal?.reason === 'string' ? signal.reason : 'aborted by the user');
    const onAbort = () => controller?.abort(new AbortedError(abortedWhy()));
    const finish = (error?: { kind: RequestErrorKind; message: string }, end = nowMs()) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      void fresh?.close().catch(() => undefined);
      const timing = { sentAtMs, origin, start, end, resent, waitedForSlot: arrival?.waitedForSlot ?? false };
      resolve(buildOutcome(context, item, index, timing, tokenTimes, state, error));
    };
    if (signal?.aborted) return finish({ kind: 'aborted', message: 'aborted before sending' });
    signal?.addEventListener('abort', onAbort, { once: true });

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(dispatchController) {
        controller = dispatchController;
        if (signal?.aborted) dispatchController.abort(new AbortedError(abortedWhy()));
      },
      onResponseStart(_controller, statusCode) {
        responded = true;
        status = statusCode;
      },
      onResponseData(_controller, chunk) {
        const arrival = nowMs();
        if (status >= 400) {
          if (errorBody.length < MAX_ERROR_BODY) errorBody += chunk.toString('utf8');
          return;
        }
        unparsedArrival.push(arrival);
        if (unparsedText.push(decoder.write(chunk)) === 1) deferToCheckPhase(parseReceived);
      },
      onResponseEnd() {
        // The end of the body is its arrival, before the chunks still waiting are parsed.
        const end = nowMs();
        parseReceived();
        if (formatError) return finish(classifyError(formatError), end);
        if (status >= 400) {
          const kind = status >= 500 ? 'http-5xx' : 'http-4xx';
          return finish({ kind, message: `HTTP ${status}: ${errorBody.trim().slice(0, MAX_ERROR_BODY) || '(empty body)'}` }, end);
        }
        if (!state.done) {
          return finish({ kind: 'malformed-stream', message: 'stream ended without its final event (truncated or not a streaming response)' }, end);
        }
        finish(undefined, end);
      },
      onResponseError(_controller, error) {
        // A server may close a kept-alive connection right after a response while still advertising keep-alive
        // (llama-server does); a request sent on it meanwhile dies before any answer. Only such a request (nothing
        // received, on a connection that had served a response) is sent once more, on a connection of its own, and
        // counted as resent; a reset of a fresh connection or after an answer began is a real failure.
        if (!responded && fresh === undefined && !signal?.aborted && closedAfterServing(error)) {
          fresh = new Client(context.origin);
          resent = true;
          sentAtMs = Date.now();
          start = nowMs();
          return send(fresh);
        }
        const end = nowMs();
        parseReceived();
        finish(classifyError(error, context), end);
      },
    };
    const send = (dispatcher: Dispatcher) =>
      dispatcher.dispatch(
        {
          origin: context.origin,
          path: context.pathPrefix + backend.path,
          method: 'POST',
          headers: JSON_HEADERS,
          body: backend.body(item, context.backendOptions),
          headersTimeout: context.requestTimeoutMs,
          bodyTimeout: context.requestTimeoutMs,
          reset: context.keepAlive === false,
        },
        handler,
      );
    send(context.dispatcher);
  });
}

const deferred: Array<() => void> = [];

/**
 * Run `task` in the check phase of this event-loop turn, after every I/O callback of the poll phase: all sockets
 * that became readable together are timestamped first and parsed after, so at high stream counts a chunk's arrival
 * time does not include the parsing of the chunks read before it.
 */
function deferToCheckPhase(task: () => void): void {
  if (deferred.push(task) === 1) setImmediate(runDeferred);
}

function runDeferred(): void {
  for (let i = 0; i < deferred.length; i++) deferred[i]!();
  deferred.length = 0;
}

export function classifyError(
  error: unknown,
  context?: Pick<RequestContext, 'requestTimeoutMs' | 'requestTimeoutSetting'>,
): { kind: RequestErrorKind; message: string } {
  if (error instanceof AbortedError) return { kind: 'aborted', message: error.message };
  if (error instanceof StreamFormatError) return { kind: 'malformed-stream', message: error.message };
  const code = (error as NodeJS.ErrnoException)?.code ?? (error as { cause?: NodeJS.ErrnoException })?.cause?.code;
  const message = (error as Error)?.message ?? String(error);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
    const setting = context?.requestTimeoutSetting ?? 'the request timeout';
    const limit = context ? `${formatSeconds(context.requestTimeoutMs)} (${setting})` : setting;
    return { kind: 'timeout', message: `no response data for ${limit}: raise ${setting} if the server is slow rather than hung (${message})` };
  }
  return { kind: 'connection', message: code && !message.includes(code) ? `${message} (${code})` : message };
}

/** Output-token counts of one request by source; a source that has no count is undefined. */
interface Counts {
  usage?: number;
  tokenizer?: number;
  stream: number;
  /** Words of the streamed text: the least number of tokens it holds (see StreamState.words). */
  words?: number;
}

const METHOD_OF: Record<TokenCountSource, TokenCountMethod> = { usage: 'server-usage', tokenizer: 'tokenizer', stream: 'stream-chunks' };

/** The count to use: the trusted source when it has one, else usage, tokenizer, counted events in that order. */
export function chooseCount(counts: Counts, trusted?: TokenCountSource): { method: TokenCountMethod; tokens: number } {
  const trustedCount = trusted && counts[trusted];
  if (trusted && trustedCount !== undefined) return { method: METHOD_OF[trusted], tokens: trustedCount };
  if (counts.usage !== undefined) return { method: 'server-usage', tokens: counts.usage };
  if (counts.tokenizer !== undefined) return { method: 'tokenizer', tokens: counts.tokenizer };
  return { method: 'stream-chunks', tokens: counts.stream };
}

/**
 * The counts when the server's usage disagrees with another source: with the stream's events beyond one event's
 * worth, or with a local tokenizer's count beyond its tolerance (a boundary token or two per hundred). Every token
 * event carries at least one token, so usage below the events is impossible; above them, events that carried several
 * tokens may explain it, which the level decides with the text's words (`eventsCarriedSeveral` in
 * metrics/summary.ts). The words alone never make a disagreement: usage that agrees with the events is two sources
 * agreeing, and a vocabulary may hold tokens of several words (a real llama-server with the random-weight test models
 * streams 96 tokens of 182 words, one event each, usage 96).
 */
export function countDisagreement(counts: Counts): TokenCountDisagreement | undefined {
  const { usage, tokenizer, stream, words } = counts;
  if (usage === undefined) return undefined;
  const streamOff = Math.abs(usage - stream) > 1;
  const tokenizerOff = tokenizer !== undefined && Math.abs(usage - tokenizer) > tokenizerTolerance(usage);
  if (!streamOff && !tokenizerOff) return undefined;
  return { usage, stream, ...(tokenizer !== undefined && { tokenizer }), ...(words !== undefined && { words }) };
}

interface Timing {
  sentAtMs: number;
  /** Scheduled arrival (open loop) or first send: where TTFT and e2e count from. */
  origin: number;
  /** The send that produced the response. */
  start: number;
  end: number;
  resent: boolean;
  waitedForSlot: boolean;
}

function buildOutcome(
  context: RequestContext,
  item: PromptItem,
  index: number,
  timing: Timing,
  tokenTimes: number[],
  state: StreamState,
  failure?: { kind: RequestErrorKind; message: string },
): RequestOutcome {
  const counts: Counts = { stream: state.tokenEvents, words: state.words };
  if (state.completionTokens !== undefined) counts.usage = state.completionTokens;
  if (context.tokenizer && state.collectText) counts.tokenizer = context.tokenizer.count(state.text);
  const { method: tokenCountMethod, tokens: outputTokens } = chooseCount(counts, context.tokenCounts);
  const noOutput = `the server generated no output tokens (asked for ${item.maxTokens}; usage ${counts.usage ?? 'none'}, ${counts.stream} token events)`;
  const error = failure ?? (outputTokens === 0 ? { kind: 'no-output' as const, message: noOutput } : undefined);
  const itlMs = new Array<number>(Math.max(0, tokenTimes.length - 1));
  for (let i = 1; i < tokenTimes.length; i++) itlMs[i - 1] = tokenTimes[i]! - tokenTimes[i - 1]!;
  const sample: RequestSample = {
    index,
    sentAtMs: timing.sentAtMs,
    inputTokens: state.promptTokens ?? item.inputTokens,
    outputTokens,
    requestedTokens: item.maxTokens,
    itlMs,
  };
  const queueMs = timing.start - timing.origin;
  if (queueMs > 0) sample.queueMs = queueMs;
  if (timing.waitedForSlot) sample.waitedForSlot = true;
  if (timing.resent) sample.resent = true;
  if (item.category !== undefined) sample.category = item.category;
  if (item.session) sample.turn = item.session.turn + 1;
  if (item.targetCachedTokens !== undefined) sample.targetCachedTokens = item.targetCachedTokens;
  if (state.cachedTokens !== undefined) sample.cachedTokens = state.cachedTokens;
  if (tokenTimes.length > 0) sample.ttftMs = tokenTimes[0]! - timing.origin;
  if (error) {
    sample.error = error;
  } else {
    sample.e2eMs = timing.end - timing.origin;
    if (sample.ttftMs !== undefined && outputTokens > 1) sample.tpotMs = (sample.e2eMs - sample.ttftMs) / (outputTokens - 1);
    const disagreement = countDisagreement(counts);
    if (disagreement) sample.tokenCountDisagreement = disagreement;
  }
  return { sample, tokenCountMethod, state };
}
