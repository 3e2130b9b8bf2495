/**
 * Opt-in, against a real llama.cpp llama-server (see ../shared/real-engine/README.md to build one and make a model):
 *   SERVELAB_LLAMA_SERVER=/path/to/llama-server SERVELAB_LLAMA_MODEL=/path/to/target.gguf node --test dist/test/real/llama-http.test.js
 * llama-server closes its connection after each streamed response while advertising keep-alive, and keeps each
 * slot's prompt cached: no request may fail for the first, and a prompt salt must defeat the second.
 */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchServer } from '../../src/launch/launch.js';
import { runBenchmark } from '../../src/load/run.js';
import type { BenchOptions } from '../../src/load/types.js';
import { BUILTIN_PROFILES } from '../../src/profiles/builtin.js';

const BINARY = process.env.SERVELAB_LLAMA_SERVER;
const MODEL = process.env.SERVELAB_LLAMA_MODEL;
const skip = BINARY && MODEL ? false : 'set SERVELAB_LLAMA_SERVER (llama-server binary) and SERVELAB_LLAMA_MODEL (a .gguf) to run it';

async function llamaServer(t: TestContext, slots: number) {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-llama-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const server = await launchServer({
    command: [BINARY!, '-m', MODEL!, '--host', '127.0.0.1', '--port', '{port}', '-np', String(slots), '-c', String(2048 * slots)],
    env: {},
    profile: BUILTIN_PROFILES.llamacpp!,
    logPath: join(dir, 'llama-server.log'),
    readyTimeoutMs: 300_000,
  });
  t.after(() => server.stop());
  return server;
}

function options(baseUrl: string, overrides: Partial<BenchOptions>): BenchOptions {
  return {
    baseUrl,
    backend: 'openai-completions',
    workload: { kind: 'single-stream', requests: 4 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 256 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 1 },
    warmupRequests: 0,
    ignoreEos: true,
    requestTimeoutMs: 120_000,
    specMetrics: 'none',
    ...overrides,
  };
}

describe('real llama-server', { skip }, () => {
  test('kept-alive connections closed by llama-server fail no request', async (t) => {
    const server = await llamaServer(t, 4);
    const result = await runBenchmark(options(server.baseUrl, { workload: { kind: 'concurrency', concurrency: 4, requests: 40 }, prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 32 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 1 } }));
    assert.equal(result.levels[0]!.failed, 0, JSON.stringify(result.levels[0]!.errorsByKind));
  });

  test('its prompt cache makes a repeat fast; another prompt salt makes the same prompts cold again', async (t) => {
    const server = await llamaServer(t, 1);
    // One prompt repeated: the single slot still holds it on the repeat.
    const ttft = async (promptSalt: number) => (await runBenchmark(options(server.baseUrl, { workload: { kind: 'single-stream', requests: 1 }, promptSalt }))).levels[0]!.ttftMs.median;
    const cold = await ttft(1);
    const repeat = await ttft(1);
    const salted = await ttft(2);
    assert.ok(repeat < cold / 2, `repeat ${repeat.toFixed(0)} ms vs cold ${cold.toFixed(0)} ms: the cache did not help`);
    assert.ok(salted > cold * 0.6, `salted ${salted.toFixed(0)} ms vs cold ${cold.toFixed(0)} ms: the salt did not defeat the cache`);
  });
});
