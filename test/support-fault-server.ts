/**
 * A tiny OpenAI-compatible streaming server (/v1/completions, /v1/models, /health) that misbehaves on purpose, the
 * ways adversarial testing found real servers do: stops short despite ignore_eos, generates nothing, reports usage
 * that is not what it streamed, resets connections after reading a request, takes long for the first token, logs a
 * fatal CUDA error and serves on, hangs (health answers, the first token never comes), streams each word as several
 * token events (an answer over its max_tokens by the server's own count), or several tokens in one event (as vLLM
 * does when its client falls behind: vllm/v1/engine/output_processor.py RequestOutputCollector merges the outputs
 * not yet taken), or answers otherwise when other requests are in flight (a baseline that disagrees with itself
 * when batched: a broken A/A floor).
 *
 * In-process (`startFaultServer`) or as a server process that `servelab run` launches:
 * `node support-fault-server.js --port N [--fatal-after N] [--hang-after N] [--tpot-ms N] [--output-share S] [--usage-factor F]
 * [--events-per-word N] [--words-per-event N] [--batched-from N]`.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

export interface Faults {
  /** Share of the requested max_tokens generated, then finish_reason "stop" (default 1: all of them, "length"). */
  outputShare?: number;
  /** usage.completion_tokens = the tokens streamed × this (default 1: honest). */
  usageFactor?: number;
  /** Each generated word is streamed as this many tokens, one event each (" th", "e"), all counted by usage (1 to 4). */
  eventsPerWord?: number;
  /** Each event carries this many of the tokens (" the the the"); usage counts the tokens. */
  wordsPerEvent?: number;
  /** Every Nth request (1-based count over the server's life) is read in full, then its connection reset. */
  resetEvery?: number;
  /** Delay before the first token, and between tokens, ms. */
  ttftMs?: number;
  tpotMs?: number;
  /** Once this many requests arrived (1-based count), FATAL_LINES go to stderr, once; serving goes on. */
  fatalAfter?: number;
  /** Requests after this many (1-based count) never get a first token; /health still answers. */
  hangAfter?: number;
  /** From this token on, an answer that has had another request in flight beside it says " a" instead of " the". */
  batchedFrom?: number;
}

/**
 * A vLLM V1 worker's CUDA fault while serving, as vllm#14404 shows it (multiproc_executor.py:375 "WorkerProc hit
 * an exception", vllm/v1/worker/gpu_worker.py execute_model); also vllm#6976, vllm#13939.
 */
export const FATAL_LINES = [
  '(VllmWorker rank=0 pid=4242) ERROR 03-06 06:49:30 [multiproc_executor.py:375] WorkerProc hit an exception.',
  '(VllmWorker rank=0 pid=4242) ERROR 03-06 06:49:30 [multiproc_executor.py:375] Traceback (most recent call last):',
  '(VllmWorker rank=0 pid=4242) ERROR 03-06 06:49:30 [multiproc_executor.py:375]   File "/workspace/vllm/vllm/v1/worker/gpu_worker.py", line 226, in execute_model',
  '(VllmWorker rank=0 pid=4242) ERROR 03-06 06:49:30 [multiproc_executor.py:375]     output = self.model_runner.execute_model(scheduler_output)',
  '(VllmWorker rank=0 pid=4242) ERROR 03-06 06:49:30 [multiproc_executor.py:375] RuntimeError: CUDA error: an illegal memory access was encountered',
];

export interface FaultServer {
  url: string;
  /** Completion requests received (reset ones included). */
  requests(): number;
  /** Connections reset after reading a request. */
  resets(): number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `word` cut into `count` pieces of text (" the" in 2: " th", "e"). */
function pieces(word: string, count: number): string[] {
  const cut = (index: number) => Math.round((index * word.length) / count);
  return Array.from({ length: count }, (_, index) => word.slice(cut(index), cut(index + 1)));
}

export async function startFaultServer(t: TestContext, faults: Faults = {}): Promise<FaultServer> {
  const server = await serveFaults(faults);
  t.after(() => server.close());
  return server;
}

async function serveFaults(faults: Faults, port = 0): Promise<FaultServer & { close(): Promise<void> }> {
  let requests = 0;
  let resets = 0;
  let inFlight = 0;
  const chunk = (res: ServerResponse, value: unknown) => res.write(`data: ${JSON.stringify(value)}\n\n`);
  const complete = async (req: IncomingMessage, res: ServerResponse, body: string) => {
    const count = ++requests;
    if (count === faults.fatalAfter) {
      // The time it was written, for the test to measure how soon the trial stopped.
      process.stderr.write(`fault server: request ${count}, fatal error written at ${Date.now()}\n${FATAL_LINES.join('\n')}\n`);
    }
    if (faults.hangAfter !== undefined && count > faults.hangAfter) return;
    if (faults.resetEvery && count % faults.resetEvery === 0) {
      resets++;
      req.socket.resetAndDestroy();
      return;
    }
    const { max_tokens: maxTokens = 16 } = JSON.parse(body) as { max_tokens?: number };
    const generated = Math.round(maxTokens * (faults.outputShare ?? 1));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const tokens = Array.from({ length: generated }, () => pieces(' the', faults.eventsPerWord ?? 1)).flat();
    const perEvent = faults.wordsPerEvent ?? 1;
    const batchedFrom = faults.batchedFrom ?? Number.POSITIVE_INFINITY;
    inFlight++;
    let shared = false;
    try {
      await sleep(faults.ttftMs ?? 1);
      for (let i = 0; i < tokens.length && !res.destroyed; i += perEvent) {
        if (i > 0 && faults.tpotMs) await sleep(faults.tpotMs);
        shared ||= inFlight > 1;
        const text = tokens
          .slice(i, i + perEvent)
          .map((token, k) => (shared && i + k >= batchedFrom ? ' a' : token))
          .join('');
        chunk(res, { id: 'c', object: 'text_completion', model: 'fault', choices: [{ index: 0, text, finish_reason: null }] });
      }
    } finally {
      inFlight--;
    }
    if (res.destroyed) return;
    const finishReason = generated < maxTokens ? 'stop' : 'length';
    chunk(res, { id: 'c', object: 'text_completion', model: 'fault', choices: [{ index: 0, text: '', finish_reason: finishReason }] });
    const completionTokens = Math.round(tokens.length * (faults.usageFactor ?? 1));
    chunk(res, { id: 'c', object: 'text_completion', model: 'fault', choices: [], usage: { prompt_tokens: 8, completion_tokens: completionTokens } });
    res.end('data: [DONE]\n\n');
  };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (data: Buffer) => (body += data.toString('utf8')));
    req.on('end', () => {
      if (req.url === '/v1/completions' && req.method === 'POST') return void complete(req, res, body);
      if (req.url === '/v1/models') return void res.end(JSON.stringify({ data: [{ id: 'fault' }] }));
      if (req.url === '/health') return void res.end('ok');
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: () => requests,
    resets: () => resets,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The fault server as an experiment's `server:` section. It only streams, so readiness does not try a generation:
 * its requests, counted over its life, are the warm-up request (1), then the trials'.
 */
export function faultServerSection(flags: string[]) {
  return { command: ['node', fileURLToPath(import.meta.url), '--port', '{port}', ...flags], readyTimeout: '5m', verifyServing: false };
}

/** Numeric flags of the process form: each is a Faults key in kebab case. */
const FLAGS = {
  port: 'port',
  'fatal-after': 'fatalAfter',
  'hang-after': 'hangAfter',
  'tpot-ms': 'tpotMs',
  'ttft-ms': 'ttftMs',
  'output-share': 'outputShare',
  'usage-factor': 'usageFactor',
  'events-per-word': 'eventsPerWord',
  'words-per-event': 'wordsPerEvent',
  'batched-from': 'batchedFrom',
} as const;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: Object.fromEntries(Object.keys(FLAGS).map((flag) => [flag, { type: 'string' }])) });
  const faults: Faults & { port?: number } = {};
  for (const [flag, key] of Object.entries(FLAGS)) if (typeof values[flag] === 'string') faults[key] = Number(values[flag]);
  const server = await serveFaults(faults, faults.port);
  console.log(`fault server listening on ${server.url}`);
}
