/**
 * A server that closes kept-alive connections under the client (llama-server does, while advertising keep-alive):
 * the simulator's closeKeptAlive mode reproduces it, and no request of a benchmark fails because of it.
 */

import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { Pool } from 'undici';
import { runBenchmark } from '../src/load/run.js';
import { scrapeSpecCounters } from '../src/load/spec.js';
import type { BenchOptions } from '../src/load/types.js';
import { startSimulator } from '../src/simulate/server.js';

async function closingSim(t: TestContext) {
  const handle = await startSimulator({ startup: { loadMs: 0 }, closeKeptAlive: true, decode: { ttftBaseMs: 2, tpotMs: 1, jitter: 0 } });
  t.after(() => handle.close());
  await handle.ready;
  return handle;
}

const streamedCompletion = JSON.stringify({ model: 'sim-llama-8b', prompt: 'hello', max_tokens: 4, stream: true, ignore_eos: true });

describe('connections closed under the client', () => {
  test('the simulator mode bites: a second request on the same kept-alive connection dies before any answer', async (t) => {
    const sim = await closingSim(t);
    const pool = new Pool(sim.url, { connections: 1 });
    t.after(() => pool.destroy());
    const send = () => pool.request({ path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: streamedCompletion });
    const first = await send();
    assert.equal(first.headers.connection, 'keep-alive', 'keep-alive is advertised');
    await first.body.text();
    await assert.rejects(send(), (error: NodeJS.ErrnoException) => ['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE'].includes(error.code ?? ''));
  });

  test('a metrics scrape after streamed responses (spec-decode counters) is sent again instead of lost', async (t) => {
    const handle = await startSimulator({
      startup: { loadMs: 0 },
      closeKeptAlive: true,
      decode: { ttftBaseMs: 2, tpotMs: 1, jitter: 0, spec: { draftTokens: 2 } },
    });
    t.after(() => handle.close());
    await handle.ready;
    const pool = new Pool(handle.url, { connections: 1 });
    t.after(() => pool.destroy());
    const streamed = await pool.request({ path: '/v1/completions', method: 'POST', headers: { 'content-type': 'application/json' }, body: streamedCompletion });
    await streamed.body.text();
    const counters = await scrapeSpecCounters(pool, handle.url);
    assert.ok(counters && (counters.draftTokens ?? 0) > 0, `counters: ${JSON.stringify(counters)}`);
  });

  test('a benchmark against it loses no request: each one that got nothing is sent again on a fresh connection, and counted', async (t) => {
    const sim = await closingSim(t);
    const options: BenchOptions = {
      baseUrl: sim.url,
      backend: 'openai-completions',
      workload: { kind: 'concurrency', concurrency: 4, requests: 40 },
      prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 16 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 1 },
      warmupRequests: 2,
      ignoreEos: true,
      requestTimeoutMs: 10_000,
      specMetrics: 'none',
    };
    const result = await runBenchmark(options);
    const level = result.levels[0]!;
    assert.equal(level.failed, 0, JSON.stringify(level.errorsByKind));
    assert.equal(level.completed, 40);
    // Resent requests are counted, so a trial can be judged by them (levelValidity).
    assert.equal(level.resends ?? 0, level.samples.filter((sample) => sample.resent).length);
    t.diagnostic(`resends: ${level.resends ?? 0} of 40`);
    assert.ok((level.resends ?? 0) > 0, 'the race bites with kept-alive connections');

    // keepAlive false (bench --no-keep-alive, profile llamacpp): a connection per request, none raced, none resent.
    const fresh = (await runBenchmark({ ...options, keepAlive: false })).levels[0]!;
    assert.equal(fresh.failed, 0, JSON.stringify(fresh.errorsByKind));
    assert.equal(fresh.completed, 40);
    assert.equal(fresh.resends ?? 0, 0);
  });
});
