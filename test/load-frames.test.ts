/**
 * Reading whole SSE frames of a request's recurring event straight from the received text (readFrame in
 * src/load/backends.ts, driven by streamRequest) must read exactly what the SSE parser plus a full parse of every
 * event reads, wherever the network splits the stream: a real HTTP server on 127.0.0.1 writes each stream in random
 * pieces, with non-template events, comments, CRLF frames and hostile token texts between the recurring ones.
 */

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { createParser } from 'eventsource-parser';
import { Pool } from 'undici';
import { BACKENDS, newStreamState } from '../src/load/backends.js';
import { type RequestContext, streamRequest } from '../src/load/request.js';
import { mulberry32 } from '../src/util/random.js';

const TRICKY = [' the', '"', '\\', '\\"', '\n', 'é', '日本', '😀', '\u2028', '","text":"x', '\\u0041', '', 'data: x\n\n'];

function chunkEvent(text: string, sentNs: number, finish: string | null = null): string {
  return JSON.stringify({
    id: 'cmpl-77',
    object: 'text_completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null }],
    usage: null,
    servelab_sim: { sent_ns: String(sentNs) },
  });
}

/** One stream's SSE text: mostly recurring frames, with the other things a server may send in between. */
function streamText(seed: number): string {
  const random = mulberry32(seed);
  let text = '';
  for (let i = 0; i < 60; i++) {
    const roll = random();
    const pick = TRICKY[Math.floor(random() * TRICKY.length)]!;
    const event = chunkEvent(roll < 0.5 ? ` w${i}` : pick, 1_000_000 + i * 997);
    if (roll < 0.05) text += ': keep-alive comment\n\n';
    else if (roll < 0.08) text += `data: ${event}\r\n\r\n`;
    else if (roll < 0.1) text += `event: message\ndata: ${event}\n\n`;
    else if (roll < 0.12) text += `data:${event}\n\n`;
    // Two data lines of one event (a valid JSON object once joined by the line break): a split between them must
    // not let the second line be read as a frame of its own.
    else if (roll < 0.16 && i > 3) text += `data: {"id":"cmpl-77",\ndata: ${event.slice(1)}\n\n`;
    text += `data: ${event}\n\n`;
  }
  text += `data: ${chunkEvent(' end', 2_000_000, 'length')}\n\n`;
  text += `data: ${JSON.stringify({ id: 'cmpl-77', choices: [], usage: { prompt_tokens: 5, completion_tokens: 77 } })}\n\n`;
  return `${text}data: [DONE]\n\n`;
}

/** The reference: the whole text through the SSE parser, every event parsed in full (no template). */
function reference(text: string) {
  const state = newStreamState(true);
  state.templateBuilds = Number.POSITIVE_INFINITY;
  let tokenEvents = 0;
  createParser({
    onEvent(event) {
      if (!state.done && BACKENDS['openai-completions'].parse(event.data, state)) tokenEvents++;
    },
  }).feed(text);
  return { tokenEvents, text: state.text, completionTokens: state.completionTokens, promptTokens: state.promptTokens, simSentNs: state.simSentNs };
}

/** Serves streamText(seed) for the seed in the prompt, written in random pieces a few bytes to a few kB long. */
async function splittingServer(t: TestContext): Promise<string> {
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (part) => (body += part));
    request.on('end', () => {
      const seed = Number(JSON.parse(body).prompt);
      const text = Buffer.from(streamText(seed));
      const random = mulberry32(seed * 31);
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      let at = 0;
      const writeNext = () => {
        if (at >= text.length) return void response.end();
        // A few bytes (splitting a frame, a multi-byte character or a line break), up to a line's end, or up to two frames.
        const roll = random();
        const lineEnd = text.indexOf(10, at) + 1;
        const size = roll < 0.3 ? 1 + Math.floor(random() * 8) : roll < 0.6 && lineEnd > 0 ? lineEnd - at : Math.floor(random() * 600);
        response.write(text.subarray(at, at + size));
        at += size;
        setTimeout(writeNext, random() < 0.5 ? 0 : 1);
      };
      writeNext();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('frame reading', () => {
  test('streams split anywhere by the network read as the SSE parser and a full parse read them', async (t) => {
    const url = await splittingServer(t);
    const dispatcher = new Pool(url, { connections: 8 });
    t.after(() => dispatcher.destroy());
    let lastSentNs: string | undefined;
    const context: RequestContext = {
      dispatcher,
      origin: url,
      pathPrefix: '',
      backend: BACKENDS['openai-completions'],
      backendOptions: { ignoreEos: true },
      requestTimeoutMs: 10_000,
      // Collects the text (what a tokenizer would count) so that every token's text is compared too.
      tokenizer: { count: (text) => text.length },
      onTokenEvent: (_arrival, state) => {
        lastSentNs = state.simSentNs;
      },
    };
    for (let seed = 1; seed <= 40; seed++) {
      const outcome = await streamRequest(context, { prompt: String(seed), inputTokens: 1, maxTokens: 77 }, seed);
      const expected = reference(streamText(seed));
      assert.equal(outcome.sample.error, undefined, `seed ${seed}`);
      const { state } = outcome;
      assert.deepEqual(
        { tokenEvents: state.tokenEvents, text: state.text, completionTokens: state.completionTokens, promptTokens: state.promptTokens, simSentNs: lastSentNs },
        expected,
        `seed ${seed}`,
      );
      assert.equal(outcome.sample.itlMs.length, expected.tokenEvents - 1, `seed ${seed}: one arrival per token event`);
      assert.ok(state.template?.frameSegments, `seed ${seed}: frames were read`);
    }
  });

  test('an error event, or a data line the next piece completes as a frame, fails the request as a full parse would', async (t) => {
    const frames = Array.from({ length: 6 }, (_, i) => `data: ${chunkEvent(` t${i}`, i)}\n\n`).join('');
    const streams: Record<string, string[]> = {
      error: [`${frames}data: ${JSON.stringify({ error: { message: 'CUDA out of memory' } })}\n\n${frames}data: [DONE]\n\n`],
      // "1\n{…}" is one event and not JSON: the second piece must not be read as a frame on its own.
      split: [`${frames}data: 1\n`, `${frames}data: [DONE]\n\n`],
    };
    const server: Server = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' });
      const [first, second] = streams[request.url!.slice(1)]!;
      response.write(first);
      setTimeout(() => response.end(second ?? ''), 20);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => server.close());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dispatcher = new Pool(url, { connections: 1 });
    t.after(() => dispatcher.destroy());
    for (const [name, message] of [
      ['error', /CUDA out of memory/],
      ['split', /not JSON: 1\n\{"id"/],
    ] as const) {
      const context: RequestContext = {
        dispatcher,
        origin: url,
        pathPrefix: `/${name}`,
        backend: { ...BACKENDS['openai-completions'], path: '' },
        backendOptions: { ignoreEos: true },
        requestTimeoutMs: 10_000,
      };
      const outcome = await streamRequest(context, { prompt: 'x', inputTokens: 1, maxTokens: 12 }, 0);
      assert.equal(outcome.sample.error?.kind, 'malformed-stream', name);
      assert.match(outcome.sample.error?.message ?? '', message, name);
    }
  });
});
