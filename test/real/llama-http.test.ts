/**
 * Opt-in, against a real llama.cpp llama-server (see ../shared/real-engine/README.md to build one and make a model):
 *   SERVELAB_LLAMA_SERVER=/path/to/llama-server SERVELAB_LLAMA_MODEL=/path/to/target.gguf node --test dist/test/real/llama-http.test.js
 * llama-server closes its connection after each streamed response while advertising keep-alive, and keeps each
 * slot's prompt cached: no request may fail or (with a connection per request) need a resend for the first, and a
 * prompt salt must defeat the second.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { launchServer } from '../../src/launch/launch.js';
import { runBenchmark } from '../../src/load/run.js';
import type { BenchOptions } from '../../src/load/types.js';
import { BUILTIN_PROFILES } from '../../src/profiles/builtin.js';
import { firstStartLosesPort, lostPortNote } from '../support-port-race.js';
import { LLAMA_MODEL, LLAMA_SERVER, llamaSkip } from './support-llama.js';

const skip = llamaSkip();

async function llamaServer(t: TestContext, slots: number) {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-llama-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const server = await launchServer({
    command: [LLAMA_SERVER!, '-m', LLAMA_MODEL!, '--host', '127.0.0.1', '--port', '{port}', '-np', String(slots), '-c', String(2048 * slots), '--metrics'],
    env: {},
    profile: BUILTIN_PROFILES.llamacpp!,
    logPath: join(dir, 'llama-server.log'),
    readyTimeoutMs: 300_000,
  });
  t.after(() => server.stop());
  return server;
}

/** llama-server's count of prompt tokens it evaluated (prompt-cache hits excluded). */
async function promptTokensTotal(baseUrl: string): Promise<number> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const line = /^llamacpp:prompt_tokens_total\s+([0-9.e+]+)/m.exec(text);
  assert.ok(line, `no llamacpp:prompt_tokens_total in /metrics:\n${text.slice(0, 400)}`);
  return Number(line[1]);
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
  test('a picked port lost before llama-server binds it (its word: "couldn\'t bind HTTP server socket"): started again on another port', async (t) => {
    for (const thief of ['holder', 'server'] as const) {
      const dir = mkdtempSync(join(tmpdir(), 'servelab-llama-port-'));
      const race = firstStartLosesPort(dir, thief);
      t.after(() => {
        race.stopThief();
        rmSync(dir, { recursive: true, force: true });
      });
      const notes: string[] = [];
      const server = await launchServer(
        {
          command: [...race.prefix, LLAMA_SERVER!, '-m', LLAMA_MODEL!, '--host', '127.0.0.1', '--port', '{port}'],
          env: {},
          profile: BUILTIN_PROFILES.llamacpp!,
          logPath: join(dir, 'llama-server.log'),
          readyTimeoutMs: 300_000,
        },
        { onNote: (line) => notes.push(line) },
      );
      t.after(() => server.stop());
      const ports = race.ports();
      assert.equal(new URL(server.baseUrl).port, String(ports.at(-1)), thief);
      assert.deepEqual(notes, ports.slice(0, -1).map(lostPortNote), thief);
    }
  });

  test('kept-alive connections closed by llama-server fail no request; with keepAlive false (profile llamacpp) none is resent', async (t) => {
    const server = await llamaServer(t, 4);
    const load = (keepAlive?: false) =>
      runBenchmark(
        options(server.baseUrl, {
          workload: { kind: 'concurrency', concurrency: 4, requests: 40 },
          prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 32 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 1 },
          ...(keepAlive === false && { keepAlive }),
        }),
      );
    const kept = (await load()).levels[0]!;
    assert.equal(kept.failed, 0, JSON.stringify(kept.errorsByKind));
    // A resend counts against maxFailedFraction (default 0): requests racing the close would make a trial invalid.
    const fresh = (await load(false)).levels[0]!;
    t.diagnostic(
      `kept-alive: ${kept.completed} ok, ${kept.resends ?? 0} resent; a connection per request: ${fresh.completed} ok, ${fresh.resends ?? 0} resent`,
    );
    assert.equal(fresh.failed, 0, JSON.stringify(fresh.errorsByKind));
    assert.equal(fresh.resends ?? 0, 0, 'no request raced a close');
    assert.ok(BUILTIN_PROFILES.llamacpp!.closesStreamedConnections, 'the llamacpp profile sends a connection per request');
  });

  test('its prompt cache serves a repeat; another prompt salt makes the same prompts cold again', async (t) => {
    const server = await llamaServer(t, 1);
    // Ground truth from the engine: llamacpp:prompt_tokens_total counts the prompt tokens it evaluated, cached ones
    // excluded (TTFT alone cannot tell on a GPU, where a 256-token prefill takes milliseconds).
    const evaluated = async (promptSalt: number) => {
      const before = await promptTokensTotal(server.baseUrl);
      await runBenchmark(options(server.baseUrl, { workload: { kind: 'single-stream', requests: 1 }, promptSalt }));
      return (await promptTokensTotal(server.baseUrl)) - before;
    };
    const cold = await evaluated(1);
    const repeat = await evaluated(1);
    const salted = await evaluated(2);
    assert.ok(cold >= 256, `cold evaluated ${cold} prompt tokens`);
    assert.ok(repeat < cold / 4, `repeat evaluated ${repeat} of ${cold} prompt tokens: the cache did not serve it`);
    assert.ok(salted >= cold * 0.9, `salted evaluated ${salted} of ${cold} prompt tokens: the salt did not defeat the cache`);
  });
});
