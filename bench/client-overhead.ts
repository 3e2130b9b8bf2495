/**
 * How much does servelab's own client cost? Against the simulator in a separate child process on 127.0.0.1,
 * measure the streamed tokens/s and requests/s servelab sustains, its CPU time per token, and the timing error of
 * its TTFT/ITL against the simulator's ground-truth write timestamps (`servelab_sim.sent_ns`, CLOCK_MONOTONIC shared
 * with this process). The same figures for a reference client — a minimal raw undici loop that only reads the
 * stream and counts events — are measured in the same run, and servelab is reported as a ratio of it.
 *
 *   npx tsc -p . && node dist/bench/client-overhead.js [--streams 256] [--output-len 256] [--requests 4×streams] [--paced-tpot-ms 10] [--workers 1] [--sim-workers 1] [--sim-cpus LIST]
 *
 * Smoke setting (CI, test/bench-smoke.test.ts): --streams 8 --output-len 16 --requests 64 --paced-tpot-ms 2.
 *
 * --requests defaults to 4 per stream (at least 1024): fewer, and the ramp-up of the first requests and the tail of
 * the last ones would be most of what is timed. --sim-cpus LIST pins the simulator (`taskset -c LIST`); run the
 * bench itself under `taskset -c` to keep the client on other cores.
 *
 * --workers N (or auto) runs servelab's throughput and timing-error figures with N load-generation threads (CPU
 * per token then sums every thread; each worker compares its own token events with sent_ns); the raw loop stays on
 * one thread. --sim-workers N (or auto) serves
 * the streams from `servelab simulate --workers N` (N processes behind one port), so that with many client
 * threads the client's limit is measured rather than one simulator process's (about 85k tok/s); the output says
 * which simulator served.
 *
 * Timing error: TTFT error = arrival of the first token event − its sent_ns (delivery delay the client adds on top
 * of the server); ITL error = |client gap − server gap| between consecutive token events of one request.
 */
import { quantile } from 'simple-statistics';
import { Pool, request } from 'undici';
import { BACKENDS } from '../src/load/backends.js';
import { type GroundTruthErrors, groundTruthRecorder } from '../src/load/ground-truth.js';
import { runLevel } from '../src/load/level.js';
import { loadPrompts, type PromptItem } from '../src/load/prompts.js';
import { nowMs, type RequestContext } from '../src/load/request.js';
import { runBenchmark } from '../src/load/run.js';
import { LoadWorkers, resolveWorkerCount } from '../src/load/workers/pool.js';
import { type SimulatorProcess, spawnSimulator } from '../src/simulate/child.js';
import { benchFlags, benchMain, noFigure, positiveInt, positiveNumber } from './support/main.js';

const SHORT_OUTPUT_LEN = 4;
const INPUT_LEN = 32;

interface Settings {
  streams: number;
  outputLen: number;
  requests: number;
  shortRequests: number;
  pacedTpotMs: number;
  workers: number | 'auto';
  simWorkers: string;
  simCpus: string | undefined;
}

function readSettings(): Settings {
  const args = benchFlags('client-overhead', {
    options: {
      streams: { type: 'string', default: '256' },
      'output-len': { type: 'string', default: '256' },
      requests: { type: 'string' },
      'paced-tpot-ms': { type: 'string', default: '10' },
      workers: { type: 'string', default: '1' },
      'sim-workers': { type: 'string', default: '1' },
      'sim-cpus': { type: 'string' },
    },
  });
  const streams = positiveInt('--streams', args.streams);
  const requests = args.requests === undefined ? Math.max(1024, 4 * streams) : positiveInt('--requests', args.requests);
  const simWorkers = args['sim-workers'];
  if (simWorkers !== 'auto') positiveInt('--sim-workers', simWorkers);
  return {
    streams,
    outputLen: positiveInt('--output-len', args['output-len']),
    requests,
    shortRequests: 4 * requests,
    pacedTpotMs: positiveNumber('--paced-tpot-ms', args['paced-tpot-ms']),
    workers: args.workers === 'auto' ? 'auto' : positiveInt('--workers', args.workers),
    simWorkers,
    simCpus: args['sim-cpus'],
  };
}

const simulators: SimulatorProcess[] = [];

/** Start `servelab simulate` (its own processes and cores) with zero-cost timing apart from tpot; wait until it serves. */
async function startSim(settings: Settings, tpotMs: number): Promise<string> {
  const flags = ['--load-ms', '0', '--ttft-ms', '0', '--prefill-ms-per-token', '0', '--jitter', '0', '--concurrency-slowdown', '0', '--max-batch', '4096'];
  const sim = await spawnSimulator([...flags, '--stats-interval-ms', '0', '--tpot-ms', String(tpotMs), '--workers', settings.simWorkers], {
    ...(settings.simCpus && { prefix: ['taskset', '-c', settings.simCpus] }),
  });
  simulators.push(sim);
  await sim.waitForLine(/Uvicorn running on/, 60_000);
  return sim.url;
}

function prompts(count: number, outputLen: number): Promise<PromptItem[]> {
  return loadPrompts(
    { kind: 'synthetic', inputTokens: { kind: 'fixed', value: INPUT_LEN }, outputTokens: { kind: 'fixed', value: outputLen }, seed: 1 },
    count,
  );
}

interface Figures {
  tokensPerSecond: number;
  requestsPerSecond: number;
  cpuUsPerToken: number;
}

interface TimingErrors {
  ttft: number[];
  itl: number[];
}

function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

/** servelab: the public runBenchmark path, exactly what `servelab bench` runs. */
async function servelabThroughput(settings: Settings, url: string, requests: number, outputLen: number): Promise<Figures> {
  const cpuBefore = cpuMs();
  const result = await runBenchmark({
    baseUrl: url,
    backend: 'openai-completions',
    workload: { kind: 'concurrency', concurrency: settings.streams, requests },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: INPUT_LEN }, outputTokens: { kind: 'fixed', value: outputLen }, seed: 1 },
    warmupRequests: 0,
    ignoreEos: true,
    requestTimeoutMs: 60_000,
    specMetrics: 'none',
    workers: settings.workers,
  });
  const level = result.levels[0]!;
  if (level.failed > 0) {
    throw noFigure(
      `servelab's client: ${level.failed} of ${requests} requests to the simulator failed: ${JSON.stringify(level.errorsByKind)}`,
      'fewer --streams or --workers, or a less loaded machine',
    );
  }
  const tokens = level.outputTokensPerSecond * level.durationS;
  return { tokensPerSecond: level.outputTokensPerSecond, requestsPerSecond: level.requestsPerSecond, cpuUsPerToken: ((cpuMs() - cpuBefore) * 1000) / tokens };
}

const DATA = Buffer.from('data:');

/** Occurrences of `data:` in a chunk: one per SSE event. */
function countEvents(chunk: Buffer): number {
  let count = 0;
  for (let at = chunk.indexOf(DATA); at !== -1; at = chunk.indexOf(DATA, at + DATA.length)) count++;
  return count;
}

/** Reference: raw undici request loop that reads each body and counts events (2 per request are usage + [DONE]). */
async function referenceRun(
  streams: number,
  url: string,
  items: PromptItem[],
  onChunk?: (chunk: Buffer, arrivalMs: number, stream: number[]) => void,
): Promise<Figures> {
  const pool = new Pool(url, { connections: streams, pipelining: 1 });
  const cpuBefore = cpuMs();
  const started = performance.now();
  let events = 0;
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      const response = await request(`${url}/v1/completions`, {
        dispatcher: pool,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: BACKENDS['openai-completions'].body(item, { ignoreEos: true }),
      });
      const stream: number[] = [];
      for await (const chunk of response.body as AsyncIterable<Buffer>) {
        const arrival = onChunk ? nowMs() : 0;
        events += countEvents(chunk);
        onChunk?.(chunk, arrival, stream);
      }
      events -= 2;
    }
  };
  await Promise.all(Array.from({ length: streams }, worker));
  const seconds = (performance.now() - started) / 1000;
  await pool.destroy();
  return { tokensPerSecond: events / seconds, requestsPerSecond: items.length / seconds, cpuUsPerToken: ((cpuMs() - cpuBefore) * 1000) / events };
}

/**
 * servelab's request path with each token event compared to its sent_ns (groundTruthRecorder): runLevel +
 * streamRequest on this thread, or, with --workers, the load workers themselves, which attach the errors to
 * each outcome, so the errors are those of the path that produced the throughput figures.
 */
async function servelabTiming(settings: Settings, url: string, items: PromptItem[]): Promise<TimingErrors> {
  const { streams } = settings;
  const errors: TimingErrors = { ttft: [], itl: [] };
  const collect = (found: GroundTruthErrors | undefined) => {
    if (!found) return;
    errors.ttft.push(found.ttftMs);
    for (const itl of found.itlMs) errors.itl.push(itl);
  };
  const level = { label: 'timing', requests: items.length, concurrency: streams };
  const backendOptions = { ignoreEos: true };
  const workerCount = resolveWorkerCount(settings.workers, streams);
  if (workerCount > 1) {
    const workers = await LoadWorkers.start(
      workerCount,
      { origin: url, pathPrefix: '', backend: 'openai-completions', backendOptions, requestTimeoutMs: 60_000, groundTruth: true },
      streams,
    );
    try {
      await workers.runLevel(level, items, 1, (outcome) => collect(outcome.groundTruth));
    } finally {
      await workers.close();
    }
    return errors;
  }
  const dispatcher = new Pool(url, { connections: streams, pipelining: 1 });
  const recorder = groundTruthRecorder();
  const context: RequestContext = {
    dispatcher,
    origin: url,
    pathPrefix: '',
    backend: BACKENDS['openai-completions'],
    backendOptions,
    requestTimeoutMs: 60_000,
    onTokenEvent: recorder.onTokenEvent,
  };
  await runLevel(context, level, items, 1, (outcome) => collect(recorder.take(outcome.state)));
  await dispatcher.destroy();
  return errors;
}

const SENT = /"sent_ns":"(\d+)"/g;

async function referenceTiming(streams: number, url: string, items: PromptItem[]): Promise<TimingErrors> {
  const errors: TimingErrors = { ttft: [], itl: [] };
  await referenceRun(streams, url, items, (chunk, arrival, stream) => {
    for (const match of chunk.toString('latin1').matchAll(SENT)) {
      const sent = Number(match[1]) / 1e6;
      if (stream.length === 0) errors.ttft.push(arrival - sent);
      else errors.itl.push(Math.abs(arrival - stream[0]! - (sent - stream[1]!)));
      stream[0] = arrival;
      stream[1] = sent;
    }
  });
  return errors;
}

function p(values: number[], q: number): string {
  return values.length === 0 ? '-' : quantile(values, q).toFixed(3);
}

function best(runs: Figures[]): Figures {
  return runs.reduce((a, b) => (b.tokensPerSecond + b.requestsPerSecond > a.tokensPerSecond + a.requestsPerSecond ? b : a));
}

async function measure(settings: Settings): Promise<void> {
  const { streams, requests, shortRequests } = settings;
  const fastUrl = await startSim(settings, 0);
  const pacedUrl = await startSim(settings, settings.pacedTpotMs);
  const longItems = await prompts(requests, settings.outputLen);
  const shortItems = await prompts(shortRequests, SHORT_OUTPUT_LEN);
  const pacedItems = await prompts(2 * streams, 64);
  process.stderr.write(`client overhead: ${streams} streams, simulator in child processes (zero latency; paced tpot ${settings.pacedTpotMs} ms)\n`);
  const simulatorLine = `simulator: servelab simulate --workers ${settings.simWorkers} (${settings.simWorkers === '1' ? 'one process: with many client threads its ceiling may be what is measured' : 'processes behind one port'})${settings.simCpus ? `, pinned to CPUs ${settings.simCpus}` : ''}`;

  // Warm both paths (JIT, connections), then interleave repetitions so drift hits both clients alike.
  await servelabThroughput(settings, fastUrl, streams, 16);
  await referenceRun(streams, fastUrl, await prompts(streams, 16));
  const tokens = { servelab: [] as Figures[], reference: [] as Figures[] };
  const short = { servelab: [] as Figures[], reference: [] as Figures[] };
  for (let repetition = 0; repetition < 2; repetition++) {
    tokens.servelab.push(await servelabThroughput(settings, fastUrl, requests, settings.outputLen));
    tokens.reference.push(await referenceRun(streams, fastUrl, longItems));
    short.servelab.push(await servelabThroughput(settings, fastUrl, shortRequests, SHORT_OUTPUT_LEN));
    short.reference.push(await referenceRun(streams, fastUrl, shortItems));
  }
  const timing = {
    servelab: { saturated: await servelabTiming(settings, fastUrl, longItems), paced: await servelabTiming(settings, pacedUrl, pacedItems) },
    reference: { saturated: await referenceTiming(streams, fastUrl, longItems), paced: await referenceTiming(streams, pacedUrl, pacedItems) },
  };

  const rows = (['servelab', 'reference'] as const).map((client) => {
    const long = best(tokens[client]);
    const small = best(short[client]);
    const t = timing[client];
    return {
      client,
      tokensPerSecond: long.tokensPerSecond,
      cpuUsPerToken: long.cpuUsPerToken,
      requestsPerSecond: small.requestsPerSecond,
      cells: [
        client.padEnd(10),
        long.tokensPerSecond.toFixed(0).padStart(10),
        long.cpuUsPerToken.toFixed(2).padStart(10),
        small.requestsPerSecond.toFixed(0).padStart(8),
        `${p(t.saturated.ttft, 0.5)}/${p(t.saturated.ttft, 0.99)}`.padStart(20),
        `${p(t.saturated.itl, 0.5)}/${p(t.saturated.itl, 0.99)}`.padStart(18),
        `${p(t.paced.ttft, 0.5)}/${p(t.paced.ttft, 0.99)}`.padStart(18),
        `${p(t.paced.itl, 0.5)}/${p(t.paced.itl, 0.99)}`.padStart(18),
      ],
    };
  });
  const header = [
    'client'.padEnd(10),
    'tok/s'.padStart(10),
    'cpu us/tok'.padStart(10),
    'req/s'.padStart(8),
    'sat TTFT err p50/p99'.padStart(20),
    'sat ITL err p50/99'.padStart(18),
    'paced TTFT p50/p99'.padStart(18),
    'paced ITL p50/p99'.padStart(18),
  ];
  const [ours, reference] = rows as [(typeof rows)[0], (typeof rows)[0]];
  process.stdout.write(
    `${[
      `streams=${streams} output=${settings.outputLen} tokens x ${requests} requests (tok/s); ${SHORT_OUTPUT_LEN} tokens x ${shortRequests} requests (req/s); errors in ms`,
      `servelab tok/s, req/s, cpu us/tok (all threads' CPU) and timing errors with workers=${settings.workers}; the reference on one thread`,
      simulatorLine,
      header.join('  '),
      ours.cells.join('  '),
      reference.cells.join('  '),
      `servelab / reference: tok/s ${(ours.tokensPerSecond / reference.tokensPerSecond).toFixed(2)}x, req/s ${(ours.requestsPerSecond / reference.requestsPerSecond).toFixed(2)}x, cpu per token ${(ours.cpuUsPerToken / reference.cpuUsPerToken).toFixed(2)}x`,
      `servelab parse capacity (1e6 / cpu us per token): ${(1e6 / ours.cpuUsPerToken).toFixed(0)} tok/s on one core`,
    ].join('\n')}\n`,
  );
}

benchMain('client-overhead', async () => {
  const settings = readSettings();
  try {
    await measure(settings);
  } finally {
    await Promise.all(simulators.map((sim) => sim.stop()));
  }
});
