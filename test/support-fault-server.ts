/**
 * A tiny OpenAI-compatible streaming server (/v1/completions, /v1/models, /health) that misbehaves on purpose, the
 * ways adversarial testing found real servers do: stops short despite ignore_eos, generates nothing, reports usage
 * that is not what it streamed, resets connections after reading a request, takes long for the first token.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';

export interface Faults {
  /** Share of the requested max_tokens generated, then finish_reason "stop" (default 1: all of them, "length"). */
  outputShare?: number;
  /** usage.completion_tokens = generated × this (default 1: honest). */
  usageFactor?: number;
  /** Every Nth request (1-based count over the server's life) is read in full, then its connection reset. */
  resetEvery?: number;
  /** Delay before the first token, and between tokens, ms. */
  ttftMs?: number;
  tpotMs?: number;
}

export interface FaultServer {
  url: string;
  /** Completion requests received (reset ones included). */
  requests(): number;
  /** Connections reset after reading a request. */
  resets(): number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startFaultServer(t: TestContext, faults: Faults = {}): Promise<FaultServer> {
  let requests = 0;
  let resets = 0;
  const chunk = (res: ServerResponse, value: unknown) => res.write(`data: ${JSON.stringify(value)}\n\n`);
  const complete = async (req: IncomingMessage, res: ServerResponse, body: string) => {
    const count = ++requests;
    if (faults.resetEvery && count % faults.resetEvery === 0) {
      resets++;
      req.socket.resetAndDestroy();
      return;
    }
    const { max_tokens: maxTokens = 16 } = JSON.parse(body) as { max_tokens?: number };
    const generated = Math.round(maxTokens * (faults.outputShare ?? 1));
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    await sleep(faults.ttftMs ?? 1);
    for (let i = 0; i < generated && !res.destroyed; i++) {
      if (i > 0 && faults.tpotMs) await sleep(faults.tpotMs);
      chunk(res, { id: 'c', object: 'text_completion', model: 'fault', choices: [{ index: 0, text: ' the', finish_reason: null }] });
    }
    if (res.destroyed) return;
    const finishReason = generated < maxTokens ? 'stop' : 'length';
    chunk(res, { id: 'c', object: 'text_completion', model: 'fault', choices: [{ index: 0, text: '', finish_reason: finishReason }] });
    const completionTokens = Math.round(generated * (faults.usageFactor ?? 1));
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
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => requests, resets: () => resets };
}
