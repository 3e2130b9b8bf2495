import { setMaxListeners } from 'node:events';
import { connect } from 'node:net';
import { Pool, request, type Dispatcher } from 'undici';
import { summarizeLevel } from '../metrics/summary.js';
import { UserError, messageOf } from '../util/errors.js';
import { BACKENDS } from './backends.js';
import { maxInFlight, planLevels, runLevel, type LevelPlan } from './level.js';
import { loadPrompts, type PromptItem } from './prompts.js';
import type { RequestContext, RequestOutcome } from './request.js';
import { scrapeSglangServerInfo, scrapeVllmSpecCounters, specFromCounterDelta, specFromResponses } from './spec.js';
import { loadTokenizer, type TokenCounter } from './tokenizer.js';
import type { BenchOptions, BenchResult, LevelResult, SpecDecodeStats, TokenCountMethod } from './types.js';
import { ExitCode } from '../util/exit.js';

const CONNECT_TIMEOUT_MS = 5000;

/** Split a base URL into the dispatcher origin and a path prefix without trailing slash. */
/** Level label of the warm-up requests' progress updates (not measured, so never a trial's counts). */
export const WARMUP_LABEL = 'warmup';

export function parseBaseUrl(baseUrl: string): { origin: string; pathPrefix: string; host: string; port: number } {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new UserError(`invalid server URL "${baseUrl}"`, 'give a URL like http://127.0.0.1:8000', ExitCode.usage);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UserError(`unsupported URL scheme in "${baseUrl}"`, 'use an http:// or https:// URL', ExitCode.usage);
  }
  const port = url.port ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
  return { origin: url.origin, pathPrefix: url.pathname.replace(/\/+$/, ''), host: url.hostname.replace(/^\[|\]$/g, ''), port };
}

/** Fail fast with a clear message when nothing listens at the server address. */
export function checkReachable(host: string, port: number, baseUrl: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    const fail = (why: string) => {
      socket.destroy();
      reject(new UserError(`cannot reach server at ${baseUrl}: ${why}`, 'start the server (or wait until it is ready) and check the URL and port'));
    };
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => fail(`no TCP connection within ${CONNECT_TIMEOUT_MS} ms`));
    socket.once('error', (error) => fail(messageOf(error)));
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
  });
}

/** First model id of an OpenAI-compatible /v1/models, so `--model` can be left out against vLLM/SGLang. */
async function discoverModel(dispatcher: Dispatcher, baseUrl: string): Promise<string | undefined> {
  try {
    const response = await request(`${baseUrl}/v1/models`, { dispatcher, headersTimeout: CONNECT_TIMEOUT_MS, bodyTimeout: CONNECT_TIMEOUT_MS });
    const body = (await response.body.json()) as { data?: Array<{ id?: unknown }> };
    const id = body?.data?.[0]?.id;
    return response.statusCode === 200 && typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

const METHOD_RANK: Record<TokenCountMethod, number> = { 'stream-chunks': 0, tokenizer: 1, 'server-usage': 2 };

/** The least exact counting method any request needed: the honest label for the run's token figures. */
export function weakestMethod(outcomes: readonly RequestOutcome[]): TokenCountMethod {
  let method: TokenCountMethod = 'server-usage';
  for (const outcome of outcomes) {
    if (!outcome.sample.error && METHOD_RANK[outcome.tokenCountMethod] < METHOD_RANK[method]) method = outcome.tokenCountMethod;
  }
  return method;
}

interface SpecProbe {
  before: () => Promise<void>;
  after: (outcomes: readonly RequestOutcome[]) => Promise<SpecDecodeStats | undefined>;
}

function specProbe(options: BenchOptions, dispatcher: Dispatcher, baseUrl: string): SpecProbe {
  let before: Awaited<ReturnType<typeof scrapeVllmSpecCounters>>;
  return {
    async before() {
      if (options.specMetrics === 'none') return;
      before = await scrapeVllmSpecCounters(dispatcher, baseUrl);
    },
    async after(outcomes) {
      if (options.specMetrics === 'none') return undefined;
      const fromResponses = specFromResponses(outcomes.filter((outcome) => !outcome.sample.error).map((outcome) => outcome.state));
      if (fromResponses) return fromResponses;
      if (before) {
        const after = await scrapeVllmSpecCounters(dispatcher, baseUrl);
        const stats = after && specFromCounterDelta(before, after, 'vllm prometheus spec_decode counters (delta over the level)');
        if (stats) return stats;
      }
      return options.backend === 'sglang' ? scrapeSglangServerInfo(dispatcher, baseUrl) : undefined;
    },
  };
}

/**
 * Drive a running server with the workload and measure it. Throws UserError for bad input (unreachable server,
 * unreadable dataset or tokenizer, every warm-up request failing with a 4xx or connection error); request
 * failures during measurement are results, counted by kind. When `signal` aborts, requests in flight are cancelled and the levels measured so far
 * are returned with `interrupted: true`.
 */
export async function runBenchmark(options: BenchOptions): Promise<BenchResult> {
  const { origin, pathPrefix, host, port } = parseBaseUrl(options.baseUrl);
  const baseUrl = origin + pathPrefix;
  const tokenizer: TokenCounter | undefined = options.tokenizerPath ? loadTokenizer(options.tokenizerPath) : undefined;
  const levels = planLevels(options.workload);
  const totalRequests = options.warmupRequests + levels.reduce((sum, level) => sum + level.requests, 0);
  const prompts = loadPrompts(options.prompts, totalRequests, tokenizer);
  await checkReachable(host, port, options.baseUrl);
  // Every request in flight listens on the abort signal; hundreds of them are expected, not a leak.
  if (options.signal) setMaxListeners(0, options.signal);

  const dispatcher = new Pool(origin, { connections: Math.max(...levels.map(maxInFlight)), pipelining: 1 });
  const startedAt = new Date().toISOString();
  const results: LevelResult[] = [];
  const measured: RequestOutcome[] = [];
  try {
    const model = options.model ?? (options.backend.startsWith('openai') ? await discoverModel(dispatcher, baseUrl) : undefined);
    const context: RequestContext = {
      dispatcher,
      origin,
      pathPrefix,
      backend: BACKENDS[options.backend],
      backendOptions: { model, ignoreEos: options.ignoreEos },
      requestTimeoutMs: options.requestTimeoutMs,
      tokenizer,
      signal: options.signal,
    };
    let offset = 0;
    if (options.warmupRequests > 0) {
      const warmupPlan: LevelPlan = { label: WARMUP_LABEL, requests: options.warmupRequests, concurrency: Math.min(options.warmupRequests, maxInFlight(levels[0]!)) };
      const warmup = await runMeasuredLevel(context, warmupPlan, prompts.slice(0, options.warmupRequests), options);
      offset = options.warmupRequests;
      // Only set-up mistakes stop the run here (wrong API, path or model, server gone); 5xx, stalls and broken
      // streams are server behaviour that the measurement itself reports.
      const setupFailures = warmup.outcomes.filter((outcome) => outcome.sample.error?.kind === 'http-4xx' || outcome.sample.error?.kind === 'connection');
      if (!options.signal?.aborted && setupFailures.length === warmup.outcomes.length) {
        const error = setupFailures[0]!.sample.error!;
        throw new UserError(
          `all ${setupFailures.length} warm-up request(s) to ${options.baseUrl} failed: ${error.kind}: ${error.message}`,
          `check that the server speaks the ${options.backend} API (--backend) and serves the model (--model)`,
        );
      }
    }
    for (const [levelIndex, level] of levels.entries()) {
      if (options.signal?.aborted) break;
      const probe = specProbe(options, dispatcher, baseUrl);
      await probe.before();
      const levelPrompts = prompts.slice(offset, offset + level.requests);
      offset += level.requests;
      const run = await runMeasuredLevel(context, level, levelPrompts, options, levelIndex);
      measured.push(...run.outcomes);
      const spec = options.signal?.aborted ? undefined : await probe.after(run.outcomes);
      results.push(
        summarizeLevel({
          label: level.label,
          concurrency: level.concurrency,
          targetRequestsPerSecond: level.rate?.requestsPerSecond,
          durationS: run.durationS,
          samples: run.outcomes.map((outcome) => outcome.sample),
          slo: options.slo,
          spec,
        }),
      );
    }
    const result: BenchResult = {
      schemaVersion: 1,
      startedAt,
      baseUrl: options.baseUrl,
      backend: options.backend,
      tokenCountMethod: weakestMethod(measured),
      interrupted: options.signal?.aborted ?? false,
      levels: results,
    };
    if (model) result.model = model;
    return result;
  } finally {
    await dispatcher.destroy();
  }
}

const PROGRESS_INTERVAL_MS = 250;

/** runLevel plus live progress: output tokens counted as they stream, corrected to the final count per request. */
async function runMeasuredLevel(context: RequestContext, level: LevelPlan, prompts: readonly PromptItem[], options: BenchOptions, seedOffset = 0) {
  const onProgress = options.onProgress;
  if (!onProgress) return runLevel(context, level, prompts, seedFor(options, seedOffset));
  let liveTokens = 0;
  let completed = 0;
  let failed = 0;
  const started = performance.now();
  const report = () => {
    const elapsedMs = performance.now() - started;
    onProgress({ levelLabel: level.label, completed, total: prompts.length, failed, outputTokensPerSecond: elapsedMs > 0 ? (liveTokens * 1000) / elapsedMs : 0, elapsedMs });
  };
  const timer = setInterval(report, PROGRESS_INTERVAL_MS);
  try {
    return await runLevel(
      { ...context, onTokenEvent: () => liveTokens++ },
      level,
      prompts,
      seedFor(options, seedOffset),
      (outcome) => {
        if (outcome.sample.error) {
          if (outcome.sample.error.kind !== 'aborted') failed++;
        } else {
          completed++;
          liveTokens += outcome.sample.outputTokens - outcome.state.tokenEvents;
        }
        report();
      },
    );
  } finally {
    clearInterval(timer);
    report();
  }
}

function seedFor(options: BenchOptions, levelIndex: number): number {
  const base = 'seed' in options.prompts ? options.prompts.seed : 0;
  return base + 7919 * (levelIndex + 1);
}
