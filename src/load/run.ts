import { setMaxListeners } from 'node:events';
import { connect } from 'node:net';
import { type Dispatcher, Pool, request } from 'undici';
import { summarizeCategories } from '../metrics/categories.js';
import { type LevelInput, summarizeLevel } from '../metrics/summary.js';
import { DEFAULT_LOAD_WORKERS } from '../util/defaults.js';
import { messageOf, UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { BACKENDS, type BackendRequestOptions } from './backends.js';
import { capacityLevelCount, searchCapacity } from './capacity.js';
import { servedTrackingConnector } from './connections.js';
import { type LevelPlan, type LevelRun, maxInFlight, planLevels, runLevel } from './level.js';
import { loadPromptParts, type PromptItem, saltPrompts } from './prompts.js';
import type { RequestContext, RequestOutcome } from './request.js';
import { checkSessionLevels, runSessionLevel } from './session-loop.js';
import { conversationTurn } from './sessions.js';
import { categorySpec, specProbe } from './spec-probe.js';
import { loadTokenizer, type ModelTokenizer } from './tokenizers/model.js';
import { replayedTrace, replayPrompts, replayRate, traceLengths } from './trace/replay.js';
import type { BenchOptions, BenchResult, LevelResult, RequestOutput, TokenCountMethod } from './types.js';
import { MAX_WARMUP_ROUNDS, planWarmups, type WarmupStep, warmupPromptCount, warmupSetupFailure } from './warmup.js';
import { LoadWorkers, resolveWorkerCount } from './workers/pool.js';

const CONNECT_TIMEOUT_MS = 5000;

/** Split a base URL into the dispatcher origin and a path prefix without trailing slash. */
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

/**
 * Drive a running server with the workload and measure it. Throws UserError for bad input (unreachable server,
 * unreadable dataset or tokenizer, every warm-up request failing with a 4xx or connection error); request
 * failures during measurement are results, counted by kind. When `signal` aborts, requests in flight are cancelled and the levels measured so far
 * are returned with `interrupted: true`.
 */
export async function runBenchmark(options: BenchOptions): Promise<BenchResult> {
  const { origin, pathPrefix, host, port } = parseBaseUrl(options.baseUrl);
  const baseUrl = origin + pathPrefix;
  if (options.tokenCounts === 'tokenizer' && !options.tokenizerPath) {
    throw new UserError(
      'token counts from the tokenizer need a tokenizer',
      'give the tokenizer (--tokenizer, client.tokenizer) or trust another source',
      ExitCode.usage,
    );
  }
  const tokenizer: ModelTokenizer | undefined = options.tokenizerPath ? loadTokenizer(options.tokenizerPath) : undefined;
  const promptMeasure = { tokenizer, chat: options.backend === 'openai-chat', contextTokens: options.contextTokens };
  const trace = await replayedTrace(options, promptMeasure);
  const levels = planLevels(options.workload, trace?.length);
  const workerCount = resolveWorkerCount(options.workers ?? DEFAULT_LOAD_WORKERS, Math.max(...levels.map(maxInFlight)));
  if (options.prompts.kind === 'sessions') checkSessionLevels(levels, workerCount);
  const workload = options.workload;
  const measuredParts =
    workload.kind === 'capacity' ? Array.from({ length: capacityLevelCount(workload) }, () => workload.requestsPerStep) : levels.map((level) => level.requests);
  const measuredCount = measuredParts.reduce((sum, part) => sum + part, 0);
  const warmups = planWarmups(options, levels, workerCount);
  const warmupCount = warmupPromptCount(warmups);
  // Part by part (sessions and shared prefixes are built per part), in the order offsets read them below.
  const parts = [...measuredParts, ...warmups.map((step) => step.plan.requests)];
  // A trace's own requests, whatever the workload: its warm-up salted, so it leaves none of their blocks cached.
  const traced = trace ?? (options.prompts.kind === 'trace' ? await traceLengths(options.prompts, measuredCount, promptMeasure) : undefined);
  const loaded = traced ? replayPrompts(traced, warmupCount, tokenizer) : await loadPromptParts(options.prompts, parts, promptMeasure);
  const prompts = options.promptSalt === undefined ? loaded : saltPrompts(loaded, options.promptSalt, tokenizer);
  await checkReachable(host, port, options.baseUrl);
  // Every request in flight listens on the abort signal; hundreds of them are expected, not a leak.
  if (options.signal) setMaxListeners(0, options.signal);

  const dispatcher = new Pool(origin, { connections: Math.max(...levels.map(maxInFlight)), pipelining: 1, connect: servedTrackingConnector() });
  const startedAt = new Date().toISOString();
  const results: LevelResult[] = [];
  const measured: RequestOutcome[] = [];
  const outputs: RequestOutput[] = [];
  let workers: LoadWorkers | undefined;
  try {
    const model = options.model ?? (options.backend.startsWith('openai') ? await discoverModel(dispatcher, baseUrl) : undefined);
    const backendOptions: BackendRequestOptions = {
      model,
      ignoreEos: options.ignoreEos,
      ...(options.cachePrompt === false && { cachePrompt: false }),
      ...(options.collectOutputs && { collectOutputs: true }),
    };
    // How each request is sent and counted, alike in this process and in the load workers.
    const requestSettings = {
      requestTimeoutMs: options.requestTimeoutMs,
      ...(options.requestTimeoutSetting !== undefined && { requestTimeoutSetting: options.requestTimeoutSetting }),
      ...(options.tokenCounts !== undefined && { tokenCounts: options.tokenCounts }),
      ...(options.keepAlive === false && { keepAlive: false as const }),
    };
    if (workerCount > 1) {
      workers = await LoadWorkers.start(
        workerCount,
        {
          origin,
          pathPrefix,
          backend: options.backend,
          backendOptions,
          ...requestSettings,
          tokenizerPath: options.tokenizerPath,
        },
        Math.max(...levels.map(maxInFlight)),
      );
    }
    const context: RequestContext = {
      dispatcher,
      origin,
      pathPrefix,
      backend: BACKENDS[options.backend],
      backendOptions,
      ...requestSettings,
      tokenizer,
    };
    const pool = workers;
    const runner: LevelRunner = pool
      ? { live: false, run: (level, levelPrompts, seed, signal, onDone) => pool.runLevel(level, levelPrompts, seed, onDone, signal) }
      : options.prompts.kind === 'sessions'
        ? {
            live: true,
            run: (level, turns, _seed, signal, onDone, onTokenEvent) =>
              runSessionLevel(
                { ...context, signal, ...(onTokenEvent && { onTokenEvent }) },
                level.concurrency ?? 1,
                turns,
                (history, turn) => conversationTurn(history, turn, promptMeasure),
                onDone,
              ),
          }
        : {
            live: true,
            run: (level, levelPrompts, seed, signal, onDone, onTokenEvent) =>
              runLevel({ ...context, signal, ...(onTokenEvent && { onTokenEvent }) }, level, levelPrompts, seed, onDone),
          };
    // The measured prompts come first and the warm-up's after them: the same prompts are measured whatever the
    // warm-up (its size follows the concurrency), so runs at different levels answer the same prompts.
    let offset = 0;
    let warmupOffset = measuredCount;
    const warmUpBefore = async (levelIndex: number): Promise<void> => {
      for (const step of warmups.filter((candidate) => candidate.beforeLevel === levelIndex)) {
        const warmupPrompts = prompts.slice(warmupOffset, warmupOffset + step.plan.requests);
        const outcomes = await warmUp(runner, step, warmupPrompts, options);
        const setupFailure =
          warmupOffset === measuredCount && !options.signal?.aborted ? warmupSetupFailure(outcomes, options.baseUrl, options.backend) : undefined;
        if (setupFailure) throw setupFailure;
        warmupOffset += step.plan.requests;
      }
    };
    const measure = async (level: LevelPlan, levelIndex: number): Promise<LevelResult> => {
      const probe = specProbe(options, dispatcher, baseUrl);
      await probe.before();
      const levelPrompts = prompts.slice(offset, offset + level.requests);
      const run = await runMeasuredLevel(runner, level, levelPrompts, options, levelIndex);
      if (options.collectOutputs) for (const outcome of run.outcomes) outputs.push(requestOutput(outcome, level.label, offset));
      offset += level.requests;
      // Not push(...outcomes): a level of tens of thousands of requests would overflow the call stack.
      for (const outcome of run.outcomes) measured.push(outcome);
      const spec = options.signal?.aborted ? undefined : await probe.after(run.outcomes);
      const input: LevelInput = {
        label: level.label,
        concurrency: level.concurrency,
        targetRequestsPerSecond: level.rate?.requestsPerSecond ?? (level.replay && replayRate(levelPrompts)),
        durationS: run.durationS,
        samples: run.outcomes.map((outcome) => outcome.sample),
        slo: options.slo,
        spec,
        tokenCounts: { method: weakestMethod(run.outcomes), trusted: options.tokenCounts !== undefined },
        ...(run.stopped !== undefined && { stopped: run.stopped }),
      };
      const summary = summarizeLevel(input);
      const categories = summarizeCategories(input, (samples) => categorySpec(run.outcomes, samples, options));
      if (categories) summary.categories = categories;
      return summary;
    };
    if (options.workload.kind === 'capacity') {
      // One warm-up for the whole search, at its heaviest level (planLevels' one level for a capacity workload).
      await warmUpBefore(0);
      if (!options.signal?.aborted) results.push(...(await searchCapacity(options.workload, measure, options.signal)));
    } else {
      for (const [levelIndex, level] of levels.entries()) {
        await warmUpBefore(levelIndex);
        if (options.signal?.aborted) break;
        results.push(await measure(level, levelIndex));
      }
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
    if (options.collectOutputs) result.outputs = outputs;
    return result;
  } finally {
    await workers?.close();
    await dispatcher.destroy();
  }
}

function requestOutput({ sample, state }: RequestOutcome, level: string, offset: number): RequestOutput {
  return {
    prompt: offset + sample.index,
    level,
    text: state.text,
    ...(state.tokenIds && { tokenIds: state.tokenIds }),
    ...(state.finishReason !== undefined && { finishReason: state.finishReason }),
    ...(sample.error && { error: sample.error.kind }),
  };
}

/** Runs one level in this thread or across load workers; `live`: onTokenEvent (live token counts) is called. */
interface LevelRunner {
  live: boolean;
  run(
    level: LevelPlan,
    prompts: readonly PromptItem[],
    seed: number,
    signal: AbortSignal | undefined,
    onDone?: (outcome: RequestOutcome) => void | Promise<void>,
    onTokenEvent?: () => void,
  ): Promise<LevelRun>;
}

/**
 * Failures that make a level invalid: more than `maxFailedFraction` of its planned requests; the reason, or
 * undefined while it can still be valid. Pure.
 */
export function tooManyFailures(failed: number, planned: number, maxFailedFraction: number | undefined, first?: string): string | undefined {
  if (maxFailedFraction === undefined || failed <= maxFailedFraction * planned) return undefined;
  return `stopped after ${failed} of ${planned} requests failed, more than maxFailedFraction ${maxFailedFraction} allows${first ? ` (first: ${first})` : ''}`;
}

const PROGRESS_INTERVAL_MS = 250;

/**
 * The level's requests plus live progress (output tokens counted as they stream, corrected to the final count per
 * request), the server check after a refused connection that keeps requests from being fired into a dead server,
 * and the stop once more requests failed than `maxFailedFraction` allows: the rest would measure an invalid level.
 */
async function runMeasuredLevel(
  runner: LevelRunner,
  level: LevelPlan,
  prompts: readonly PromptItem[],
  options: BenchOptions,
  seedOffset = 0,
): Promise<LevelRun & { stopped?: string }> {
  const onProgress = options.onProgress;
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  setMaxListeners(0, signal);
  let stopped: string | undefined;
  let liveTokens = 0;
  let completed = 0;
  let failed = 0;
  let firstFailure: string | undefined;
  const started = performance.now();
  const report = () => {
    if (!onProgress) return;
    const elapsedMs = performance.now() - started;
    onProgress({
      levelLabel: level.label,
      completed,
      total: prompts.length,
      failed,
      outputTokensPerSecond: elapsedMs > 0 ? (liveTokens * 1000) / elapsedMs : 0,
      elapsedMs,
    });
  };
  const timer = onProgress ? setInterval(report, PROGRESS_INTERVAL_MS) : undefined;
  const onDone = (outcome: RequestOutcome) => {
    const error = outcome.sample.error;
    if (error) {
      if (error.kind !== 'aborted') {
        failed++;
        firstFailure ??= `${error.kind}: ${error.message}`;
      }
    } else {
      completed++;
      // Tokens already counted live (this thread only) are replaced by the request's final count.
      liveTokens += outcome.sample.outputTokens - (runner.live ? outcome.state.tokenEvents : 0);
    }
    const invalid = stopped === undefined ? tooManyFailures(failed, prompts.length, options.maxFailedFraction, firstFailure) : undefined;
    if (invalid !== undefined) {
      stopped = invalid;
      stop.abort(invalid);
    }
    report();
    return error?.kind === 'connection' ? options.verifyServer?.() : undefined;
  };
  try {
    const run = await runner.run(level, prompts, seedFor(options, seedOffset), signal, onDone, onProgress && (() => liveTokens++));
    if (stopped === undefined) return run;
    // Failures may be a server that died: checked, so that its death (not an invalid level) is what is reported.
    await options.verifyServer?.();
    return { ...run, stopped };
  } finally {
    clearInterval(timer);
    report();
  }
}

/** One warm-up step: a round of its requests, repeated while its duration is not up; the outcomes of all rounds. */
async function warmUp(runner: LevelRunner, step: WarmupStep, prompts: readonly PromptItem[], options: BenchOptions): Promise<RequestOutcome[]> {
  const outcomes: RequestOutcome[] = [];
  const started = performance.now();
  for (let round = 0; round < MAX_WARMUP_ROUNDS && !options.signal?.aborted; round++) {
    const run = await runMeasuredLevel(runner, step.plan, prompts, { ...options, maxFailedFraction: undefined });
    for (const outcome of run.outcomes) outcomes.push(outcome);
    if (step.durationMs === undefined || performance.now() - started >= step.durationMs) break;
  }
  return outcomes;
}

function seedFor(options: BenchOptions, levelIndex: number): number {
  const base = options.prompts.seed ?? 0;
  return base + 7919 * (levelIndex + 1);
}
