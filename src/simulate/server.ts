import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { messageOf, UserError } from '../util/errors.js';
import type { Random } from '../util/random.js';
import { type FaultConfig, parseSimConfig, type SimConfig, type SimConfigInput } from './config.js';
import { type EngineStep, type GenerationOutcome, SimEngine } from './engine.js';
import { runEngineStartup, sglangLine, vllmLine } from './engines.js';
import { errorBody, HttpError, readJsonBody, SseWriter, sendJson, sendText } from './http.js';
import type { GenerationJob, JobFactory } from './job.js';
import { llamacppJob } from './llamacpp.js';
import { type CounterSnapshot, renderMetrics, renderSglangMetrics, type SimCounters, sglangDecodeLine, statsLines, sumCounters } from './metrics.js';
import type { EnvLookup } from './model.js';
import { chatJob, completionJob } from './openai.js';
import { type EngineHttp, engineHttp } from './personality.js';
import { cacheAnswer, cachedPrefixTokens, PrefixCache } from './prefix-cache.js';
import { sglangJob } from './sglang.js';
import { runStartup, type ServerState, vllmLogLine } from './startup.js';
import { isTgiBody, tgiJob } from './tgi.js';

export interface SimulatorOptions {
  /** Receives every log line, vLLM-style (default: discarded). */
  log?: (line: string) => void;
  /** Environment that envSpeedups are matched against (default: process.env). */
  env?: EnvLookup;
  /** A simulated crash calls this (the CLI exits 1); default: the server closes. */
  onCrash?: () => void;
  /** Set when this server is one worker of `simulate --workers N` (default personality only): the primary then plays startup and logs stats. */
  replica?: ReplicaLink;
}

export interface ReplicaLink {
  /** 1-based worker number; salts the request seeds. */
  index: number;
  /** Every worker's counters and gauges (asked of the primary): summed, scrapers see the whole server. */
  workers(): Promise<SimCounters[]>;
}

export interface SimulatorHandle {
  url: string;
  port: number;
  config: SimConfig;
  /** Current lifecycle state. */
  state(): ServerState;
  /** Moves the lifecycle on; only a replica's primary calls it (a standalone server plays its own startup). */
  setState(next: ServerState): void;
  /** This server's own counters and gauges (a replica's share of the whole). */
  counters(): SimCounters;
  /** Resolves when startup finished (ready or not-serving); rejects if a crash, OOM or hang strikes first. */
  ready: Promise<void>;
  /** Stops listening and drops every open connection. */
  close(): Promise<void>;
}

/**
 * Start the simulator in this process; resolves once it listens (startup phases then run on their own), or, for the
 * vllm and sglang personalities, which refuse connections while loading as those engines do, once its port is chosen.
 */
export async function startSimulator(input: SimConfigInput = {}, options: SimulatorOptions = {}): Promise<SimulatorHandle> {
  const config = parseSimConfig(input);
  const log = options.log ?? (() => {});
  const { replica } = options;
  const env = options.env ?? process.env;
  const listensLate = config.engine === 'vllm' || config.engine === 'sglang';
  if (replica && config.engine !== 'default' && config.engine !== 'llamacpp') {
    throw new UserError(`the ${config.engine} personality cannot run as one of several workers`, 'drop --workers, or --engine');
  }
  const engine = new SimEngine(config, env, replica?.index);
  let state: ServerState = 'loading';
  let wasReady = false;
  /** Cancels each in-flight generation, so a hang or OOM after ready can halt them all. */
  const inFlight = new Map<ServerResponse, AbortController>();
  const prefixCache = config.prefixCache.enabled ? new PrefixCache(config.prefixCache.blockChars) : undefined;

  /** Connections that served a streamed response and are being closed under a client that may reuse them. */
  const closingSockets = new WeakSet<Socket>();
  const server = createServer((req, res) => {
    if (closingSockets.has(req.socket)) return void req.socket.destroy();
    route(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.destroy();
      const httpError = error instanceof HttpError ? error : new HttpError(500, `simulator error: ${String(error)}`, 'InternalServerError');
      sendJson(res, httpError.status, errorBody(httpError));
    });
  });
  // Streams can idle for a long time (slow simulated decode, stall faults); never time them out server-side.
  server.requestTimeout = 0;
  server.keepAliveTimeout = 30_000;

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const method = req.method ?? 'GET';
    if (method === 'GET') {
      if (path === '/health') return personality ? personality.health(res) : health(res);
      if (path === '/health_generate' && personality?.healthGenerate) return personality.healthGenerate(res);
      if (path === '/v1/models') return models(res);
      if (path === '/metrics') return sendText(res, 200, 'text/plain; version=0.0.4; charset=utf-8', await metricsText());
      if (personality?.get(req, res, path)) return;
      if (path === '/sim/config') return sendJson(res, 200, config);
      if (path === '/sim/state') {
        const workers = replica && (await replica.workers());
        const { running, waiting } = workers ? sumCounters(workers) : engine.counters();
        const cache = prefixCache && { queryTokens: prefixCache.queryTokens, hitTokens: prefixCache.hitTokens };
        const perWorker = workers?.map((counters) => ({ running: counters.running, requestsFinished: counters.requestsFinished }));
        return sendJson(res, 200, {
          state,
          speedup: engine.speedup,
          running,
          waiting,
          ...(cache && { prefixCache: cache }),
          ...(perWorker && { workers: perWorker }),
        });
      }
    }
    if (personality) {
      if (await personality.reset(req, res, path)) return;
    } else if (method === 'POST' && (path === '/reset_prefix_cache' || path === '/flush_cache')) {
      prefixCache?.clear();
      return sendJson(res, 200, { success: true });
    }
    if (method === 'POST') {
      const factory = generationRoute(path);
      if (factory) return generation(req, res, factory);
    }
    throw new HttpError(404, `no route for ${method} ${path}`);
  }

  function generationRoute(path: string): ((body: unknown) => GenerationJob) | undefined {
    const withConfig = (factory: JobFactory) => (body: unknown) => factory(body, config);
    switch (path) {
      case '/v1/completions':
        return withConfig(completionJob);
      case '/v1/chat/completions':
        return withConfig(chatJob);
      case '/generate':
        // SGLang and TGI share the path; TGI bodies carry `inputs`, SGLang ones `text`/`input_ids`.
        return (body) => (isTgiBody(body) ? tgiJob(body, config, false) : sglangJob(body, config));
      case '/generate_stream':
        return (body) => tgiJob(body, config, true);
      case '/completion':
        return withConfig(llamacppJob);
      default:
        return undefined;
    }
  }

  async function metricsText(): Promise<string> {
    const counters = await serverCounters();
    if (config.engine === 'sglang') return renderSglangMetrics(config.model, counters, config.decode.spec.draftTokens);
    const vllm = config.engine === 'vllm' ? { draftTokens: config.decode.spec.draftTokens, ...(prefixCache && { prefixCache }) } : undefined;
    return renderMetrics(config.model, counters, vllm);
  }

  /** The whole server's counters: this engine's, or every worker's summed. */
  async function serverCounters(): Promise<SimCounters> {
    return replica ? sumCounters(await replica.workers()) : engine.counters();
  }

  function health(res: ServerResponse): void {
    if (state === 'ready' || state === 'not-serving') return sendJson(res, 200, { status: 'ok' });
    sendJson(res, 503, { status: wasReady ? 'unhealthy' : 'loading' });
  }

  function models(res: ServerResponse): void {
    // SGLang's tokenizer manager lists the model without asking the scheduler: a hung one leaves the list as it was
    // (sglang#6624).
    const listsAnyway = state === 'hung' && wasReady && config.engine === 'sglang';
    if (state === 'ready' || state === 'not-serving' || listsAnyway) {
      const data =
        state === 'ready' || listsAnyway
          ? [
              {
                id: config.model,
                object: 'model',
                created: 0,
                owned_by: 'servelab-sim',
                root: config.model,
                parent: null,
                max_model_len: config.decode.maxModelLen,
              },
            ]
          : [];
      return sendJson(res, 200, { object: 'list', data });
    }
    throw new HttpError(503, 'the model is not loaded');
  }

  let generationRequests = 0;
  async function generation(req: IncomingMessage, res: ServerResponse, makeJob: (body: unknown) => GenerationJob): Promise<void> {
    if (state === 'ready' && ++generationRequests === config.startup.failure.afterRequests) setState('hung');
    if (state === 'hung') return; // never answered, like a wedged server
    if (state === 'oom' && config.engine === 'vllm') {
      // vllm/entrypoints/openai/api_server.py: EngineDeadError becomes a 500 (and the server shuts down unless kept alive).
      throw new HttpError(500, 'EngineCore encountered an issue. See stack trace (above) for the root cause.', 'EngineDeadError');
    }
    if (state !== 'ready') throw new HttpError(503, state === 'loading' ? 'the model is still loading' : 'the server cannot serve generation requests');
    const body = await readJsonBody(req);
    const job = makeJob(body);
    const cachedTokens = prefixCache ? cachedPrefixTokens(prefixCache, body, job.params.promptTokens) : 0;
    if (cachedTokens > 0) job.params = { ...job.params, cachedTokens };
    const rng = engine.nextRequestRng();
    const fault = pickFault(config.faults, rng);
    if (fault?.kind === 'http-500') throw new HttpError(500, 'simulated internal server error (fault injection)', 'InternalServerError');

    const cancelled = new AbortController();
    res.on('close', () => {
      inFlight.delete(res);
      if (!res.writableFinished) cancelled.abort();
    });
    inFlight.set(res, cancelled);
    if (job.stream) await streamed(res, job, rng, cancelled, fault);
    else await unstreamed(res, job, rng, cancelled, fault);
    if (prefixCache && job.answer && !cancelled.signal.aborted) cacheAnswer(prefixCache, body, job.answer());
  }

  async function streamed(res: ServerResponse, job: GenerationJob, rng: Random, cancelled: AbortController, fault: FaultConfig | undefined): Promise<void> {
    const sse = new SseWriter(res);
    sse.open();
    const outcome = await engine.generate(job.params, rng, cancelled.signal, (step) => {
      if (fault && faultDue(fault, step)) {
        cancelled.abort();
        return strikeFault(fault, res, () => sse.raw('data: {"id":"cmpl-fault","choices":[{"index":0,"text":\n\n'));
      }
      // Like vLLM, the chat role chunk goes out with the first token, not before it.
      const events = step.index === 0 ? [...job.openingEvents(), ...job.stepEvents(step)] : job.stepEvents(step);
      return sse.events(events);
    });
    if (!outcome) return;
    await sse.events(job.closingEvents(outcome), job.endsWithDone);
    sse.end();
    if (config.closeKeptAlive) dropNextRequestOn(res.socket);
  }

  /** llama-server's close comes a moment after the response: a request sent on the socket meanwhile is lost. */
  // The next request on the socket is read and dropped unanswered (see createServer above): the close always bites,
  // however late the client reuses the connection, where a timed close would race the client's next send.
  function dropNextRequestOn(socket: Socket | null): void {
    if (socket) closingSockets.add(socket);
  }

  async function unstreamed(res: ServerResponse, job: GenerationJob, rng: Random, cancelled: AbortController, fault: FaultConfig | undefined): Promise<void> {
    const outcome: GenerationOutcome | undefined = await engine.generate(job.params, rng, cancelled.signal, (step) => {
      job.stepEvents(step);
      if (fault && faultDue(fault, step)) {
        cancelled.abort();
        strikeFault(fault, res, () => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"id": "cmpl-fault", "choices": [');
        });
      }
    });
    if (outcome) sendJson(res, 200, job.body(outcome));
  }

  function setState(next: ServerState): void {
    state = next;
    if (next === 'ready' || next === 'not-serving') {
      wasReady = true;
      resolveReady();
    } else if (next === 'hung' || next === 'oom' || next === 'crashed') {
      rejectReady(new Error(`simulated startup failure: ${next}`));
      // A dead engine breaks its open streams; a hung one just leaves them silent.
      for (const [res, cancelled] of inFlight) {
        cancelled.abort();
        if (next === 'oom') res.destroy();
      }
      if (next === 'crashed') (options.onCrash ?? (() => void close()))();
    }
  }

  let resolveReady!: () => void;
  let rejectReady!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  // Callers that never await `ready` must not get an unhandled rejection.
  ready.catch(() => {});

  const listenOn = (port: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const onError = (error: Error): void =>
        reject(new UserError(`cannot listen on ${config.host}:${port}: ${messageOf(error)}`, 'pick another --port (0 picks a free one) or --host'));
      server.once('error', onError);
      server.listen(port, config.host, () => {
        server.off('error', onError);
        resolve();
      });
    });
  // A late listener picks its port now and gives it back until it serves (a race for it is the price of refusing
  // connections the way the engine does).
  await listenOn(config.port);
  const port = (server.address() as AddressInfo).port;
  if (listensLate) await new Promise<void>((resolve) => server.close(() => resolve()));
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  const personality: EngineHttp | undefined = engineHttp(config, {
    engine,
    env,
    log,
    state: () => state,
    clearCache: () => prefixCache?.clear(),
  });
  const cancelStartup = replica
    ? () => {}
    : config.engine === 'vllm' || config.engine === 'sglang'
      ? runEngineStartup({ ...config, engine: config.engine }, url, process.pid, { log, setState, listen: () => listenOn(port) })
      : runStartup(config, url, process.pid, { log, setState });
  const stopStats = replica ? () => {} : logStatsPeriodically(() => engine.counters(), config.statsIntervalMs, log, statsFormat(config.engine));

  let closing: Promise<void> | undefined;
  function close(): Promise<void> {
    closing ??= new Promise<void>((resolve) => {
      cancelStartup();
      stopStats();
      for (const cancelled of inFlight.values()) cancelled.abort();
      if (!server.listening) return resolve();
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closing;
  }

  return { url, port, config, state: () => state, setState, counters: () => engine.counters(), ready, close };
}

/**
 * Like vLLM's engine stats logger: a line per interval, skipped while idle. `read` may be asynchronous (a
 * multi-worker primary sums its workers' counters); a read still pending when the next interval is due skips it.
 */
export function logStatsPeriodically(
  read: () => SimCounters | Promise<SimCounters>,
  intervalMs: number,
  log: (line: string) => void,
  format: (before: CounterSnapshot, current: CounterSnapshot) => string[] = defaultStats,
): () => void {
  if (intervalMs <= 0) return () => {};
  const snapshot = async (): Promise<CounterSnapshot> => ({ ...(await read()), at: performance.now() });
  let previous: Promise<CounterSnapshot> | undefined = snapshot();
  let pending = false;
  const timer = setInterval(() => {
    if (pending || !previous) return;
    pending = true;
    void Promise.all([previous, snapshot()])
      .then(([before, current]) => {
        if (current.running > 0 || current.waiting > 0 || current.generationTokens !== before.generationTokens) {
          for (const line of format(before, current)) log(line);
        }
        previous = Promise.resolve(current);
      })
      .catch(() => {
        previous = undefined; // the workers are gone: the server is shutting down
      })
      .finally(() => {
        pending = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

const defaultStats = (before: CounterSnapshot, current: CounterSnapshot): string[] =>
  statsLines(before, current).map((line) => vllmLogLine('INFO', 'loggers.py:118', line));

/** The interval stats lines as the personality's engine logs them. */
function statsFormat(engine: SimConfig['engine']): (before: CounterSnapshot, current: CounterSnapshot) => string[] {
  if (engine === 'vllm')
    return (before, current) => statsLines(before, current).map((line) => vllmLine('APIServer', process.pid, 'INFO', 'loggers.py:236', line));
  if (engine === 'sglang') return (before, current) => [sglangLine(sglangDecodeLine(before, current))];
  return defaultStats;
}

/** At most one fault per request, drawn from the request's own seeded stream. */
function pickFault(faults: FaultConfig[], rng: Random): FaultConfig | undefined {
  for (const fault of faults) {
    if (rng() < fault.rate) return fault;
  }
  return undefined;
}

/** Strikes once `afterTokens` tokens went out, i.e. in place of the step that would pass that count. */
function faultDue(fault: FaultConfig, step: EngineStep): boolean {
  return step.totalTokens - step.tokens.length >= fault.afterTokens;
}

function strikeFault(fault: FaultConfig, res: ServerResponse, writeMalformed: () => unknown): undefined {
  switch (fault.kind) {
    case 'stall':
      return undefined; // keep the connection open and silent until the client gives up
    case 'malformed-sse':
      writeMalformed();
      res.end();
      return undefined;
    case 'disconnect':
    case 'http-500':
      res.destroy();
      return undefined;
  }
}
