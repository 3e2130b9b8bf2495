import type { IncomingMessage, ServerResponse } from 'node:http';
import { mulberry32 } from '../util/random.js';
import { nowMs, sleepUntil } from './clock.js';
import type { SimConfig } from './config.js';
import type { SimEngine } from './engine.js';
import { sglangLine, vllmLine } from './engines.js';
import { sendJson, sendText } from './http.js';
import type { EnvLookup } from './model.js';
import type { ServerState } from './startup.js';

/** What the engine personalities answer differently from the default simulator: health, cache reset, extra GETs. */
export interface EngineHttp {
  health(res: ServerResponse): void | Promise<void>;
  /** The engine's always-generating health route, where it has one besides /health (SGLang's /health_generate). */
  healthGenerate?(res: ServerResponse): Promise<void>;
  /** Answers an engine-specific GET; false when the path is not one. */
  get(req: IncomingMessage, res: ServerResponse, path: string): boolean;
  /** Answers the engine's cache-reset route; false when the request is not one (it then falls through to 404). */
  reset(req: IncomingMessage, res: ServerResponse, path: string): Promise<boolean>;
}

export interface EngineContext {
  engine: SimEngine;
  env: EnvLookup;
  log(line: string): void;
  state(): ServerState;
  clearCache(): void;
}

/** The personality's HTTP behaviour, or undefined for the default (and llama.cpp) simulator. */
export function engineHttp(config: SimConfig, context: EngineContext): EngineHttp | undefined {
  if (config.engine === 'vllm') return vllmHttp(context);
  if (config.engine === 'sglang') return sglangHttp(config, context);
  return undefined;
}

/** An empty-bodied answer, as FastAPI's `Response(status_code=…)` gives. */
function sendEmpty(res: ServerResponse, status: number): void {
  res.writeHead(status, { 'content-length': 0 });
  res.end();
}

function query(req: IncomingMessage): URLSearchParams {
  return new URL(req.url ?? '/', 'http://sim').searchParams;
}

function vllmHttp(context: EngineContext): EngineHttp {
  return {
    // vllm/entrypoints/openai/api_server.py `health`: 200 unless check_health raises EngineDeadError, then 503. A hung
    // engine core is not "dead" (check_health only reads the errored flag), so it answers 200 too.
    health(res) {
      sendEmpty(res, context.state() === 'oom' ? 503 : 200);
    },
    get: () => false,
    async reset(req, res, path) {
      // Registered only in dev mode (VLLM_SERVER_DEV_MODE=1); otherwise FastAPI's 404.
      if (path !== '/reset_prefix_cache' || req.method !== 'POST' || context.env.VLLM_SERVER_DEV_MODE !== '1') return false;
      const held = context.engine.scheduler.running;
      // vllm/v1/core/block_pool.py `reset_prefix_cache`: refused (False) while running requests hold blocks, unless
      // the caller asks to preempt them (reset_running_requests=true).
      if (held > 0 && query(req).get('reset_running_requests') !== 'true') {
        context.log(
          vllmLine('EngineCore', process.pid, 'WARNING', 'block_pool.py:412', `Failed to reset prefix cache because some blocks (${held}) are not freed yet`),
        );
        sendJson(res, 200, { success: false });
        return true;
      }
      context.clearCache();
      sendJson(res, 200, { success: true });
      return true;
    },
  };
}

/** SGLang's answer to /flush_cache, success or not (only the status tells them apart). */
const FLUSH_TEXT =
  'Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n';
/** http_server.py `health_generate` checks for scheduler output once a second. */
const HEALTH_POLL_MS = 1000;

/**
 * An SGLang boolean variable as python/sglang/srt/environ.py `EnvBool` reads it: true/1/yes/y and false/0/no/n in any
 * case; anything else is warned about and the default used.
 */
function sglangEnvBool(name: string, value: string | undefined, fallback: boolean, log: (line: string) => void): boolean {
  if (value === undefined) return fallback;
  const word = value.toLowerCase();
  if (['true', '1', 'yes', 'y'].includes(word)) return true;
  if (['false', '0', 'no', 'n'].includes(word)) return false;
  log(`UserWarning: Invalid value for ${name}: "${word}" is not a valid boolean value, using default "${fallback ? 'True' : 'False'}"`);
  return fallback;
}

function sglangHttp(config: SimConfig, context: EngineContext): EngineHttp {
  const { engine } = context;
  /** Spec counters at the last flush: SGLang's avg_spec_accept_length restarts there. */
  let flushedAt = { drafts: 0, accepted: 0 };
  const busy = (): boolean => engine.scheduler.running + engine.scheduler.queued > 0;
  // SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION (environ.py, default true; SGLang 0.5.9 on): when false, http_server.py
  // `health_generate` answers /health 200 without a generation once the server is no longer Starting, and only
  // /health_generate still generates (users set it where polling /health stalled their scheduler, e.g.
  // radixark/miles#196). servelab's readiness still sends its own generation after /health.
  const healthGenerates = sglangEnvBool('SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION', context.env.SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION, true, context.log);

  const serverInfo = (res: ServerResponse): void => {
    const k = config.decode.spec.draftTokens;
    const { specDrafts, specAcceptedTokens } = engine.metrics;
    const drafts = specDrafts - flushedAt.drafts;
    sendJson(res, 200, {
      model_path: config.model,
      served_model_name: config.model,
      speculative_algorithm: k > 0 ? 'EAGLE3' : null,
      speculative_num_steps: k > 0 ? k : null,
      speculative_eagle_topk: k > 0 ? 1 : null,
      speculative_num_draft_tokens: k > 0 ? k + 1 : null,
      incremental_streaming_output: config.sglang.incrementalStreamingOutput,
      enable_metrics: true,
      max_running_requests: config.decode.maxBatch,
      version: '0.5.15',
      // One entry per data-parallel rank; a running mean since start or the last /flush_cache (scheduler.py
      // `get_internal_state`: cum_spec_accept_length / cum_spec_accept_count, both zeroed by flush_cache).
      internal_states: [{ avg_spec_accept_length: drafts > 0 ? (specAcceptedTokens - flushedAt.accepted + drafts) / drafts : 0, last_gen_throughput: 0 }],
    });
  };

  async function healthGenerate(res: ServerResponse): Promise<void> {
    const state = context.state();
    if (state === 'loading') return sendEmpty(res, 503);
    // health_generate: a one-token request through the scheduler, healthy as soon as the scheduler produces any
    // output after `tic` (its own or another request's), 503 after SGLANG_HEALTH_CHECK_TIMEOUT without.
    const tic = nowMs();
    const deadline = tic + config.sglang.healthCheckTimeoutMs;
    const cancelled = new AbortController();
    res.on('close', () => cancelled.abort());
    if (state === 'ready' || state === 'not-serving') {
      void engine.generate({ promptTokens: 1, maxTokens: 1, ignoreEos: true, internal: true }, mulberry32(1), cancelled.signal, () => {});
    }
    try {
      while (nowMs() < deadline && !cancelled.signal.aborted) {
        await sleepUntil(Math.min(nowMs() + HEALTH_POLL_MS, deadline), cancelled.signal);
        if (engine.lastOutputAt > tic) return sendEmpty(res, 200);
      }
      context.log(
        sglangLine(
          `Health check failed. Server couldn't get a response from detokenizer for last ${(config.sglang.healthCheckTimeoutMs / 1000).toFixed(0)} seconds.`,
          undefined,
        ),
      );
      if (!res.destroyed) sendEmpty(res, 503);
    } finally {
      cancelled.abort();
    }
  }

  return {
    health(res) {
      if (!healthGenerates && context.state() !== 'loading') return sendEmpty(res, 200);
      return healthGenerate(res);
    },
    healthGenerate,
    get(_req, res, path) {
      // /get_server_info is the deprecated name of /server_info.
      if (path !== '/server_info' && path !== '/get_server_info') return false;
      // http_server.py get_server_info awaits tokenizer_manager.get_internal_state(), a round trip to the scheduler:
      // a hung (or dead) scheduler leaves it unanswered while /v1/models, answered by the HTTP side, still answers.
      if (context.state() === 'hung') return true;
      serverInfo(res);
      return true;
    },
    async reset(req, res, path) {
      if (path !== '/flush_cache' || (req.method !== 'POST' && req.method !== 'GET')) return false;
      // scheduler.py `flush_cache`: refused while requests run or wait; `timeout` (seconds) waits for them first.
      const waitUntil = nowMs() + 1000 * Math.max(0, Number(query(req).get('timeout') ?? 0) || 0);
      const never = new AbortController().signal;
      while (busy() && nowMs() < waitUntil) await sleepUntil(Math.min(nowMs() + 20, waitUntil), never);
      if (busy()) {
        context.log(
          sglangLine(`Cache not flushed because there are pending requests. #queue-req: ${engine.scheduler.queued}, #running-req: ${engine.scheduler.running}`),
        );
        sendText(res, 400, 'text/plain; charset=utf-8', FLUSH_TEXT);
        return true;
      }
      context.clearCache();
      flushedAt = { drafts: engine.metrics.specDrafts, accepted: engine.metrics.specAcceptedTokens };
      context.log(sglangLine('Cache flushed successfully!'));
      sendText(res, 200, 'text/plain; charset=utf-8', FLUSH_TEXT);
      return true;
    },
  };
}
