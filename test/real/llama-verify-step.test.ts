/**
 * Opt-in, against a real llama.cpp llama-server with a draft model (see ../shared/real-engine/README.md):
 *   SERVELAB_LLAMA_SERVER=… SERVELAB_LLAMA_MODEL=target.gguf SERVELAB_LLAMA_DRAFT=draft.gguf npm run test:real
 * servelab's verify-step time (client-side decode time over target steps derived from timings.draft_n_accepted,
 * src/load/spec.ts) checked against the server's own: each request's log block prints "eval time = T ms / N tokens"
 * (t_gen: first token to last, over N - 1 steps, server-common.h n_gen_steps) and "draft acceptance = … (A accepted
 * / D generated)" (server-context.cpp print_timings), so the server's time per target step is ΣT / Σ(N - 1 - A).
 */

import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { launchServer } from '../../src/launch/launch.js';
import { runBenchmark } from '../../src/load/run.js';
import { BUILTIN_PROFILES } from '../../src/profiles/builtin.js';
import { LLAMA_DRAFT, LLAMA_MODEL, LLAMA_SERVER, llamaSkip, speculate } from './support-llama.js';

const skip = llamaSkip(true);

/**
 * The server's own time per target step over the requests that drafted: each request's timings block starts with
 * "prompt eval time"; the readiness probe's one-token request drafts nothing and prints no acceptance line.
 */
function serverVerifyStepMs(log: string): { ms: number; requests: number; steps: number } {
  let ms = 0;
  let steps = 0;
  let requests = 0;
  for (const block of log.split(/prompt eval time =/).slice(1)) {
    const evaluated = /\s eval time =\s*([0-9.]+) ms \/\s*(\d+) tokens/.exec(block);
    const accepted = /draft acceptance = [0-9.]+ \(\s*(\d+) accepted/.exec(block);
    if (!evaluated || !accepted) continue;
    ms += Number(evaluated[1]);
    steps += Number(evaluated[2]) - 1 - Number(accepted[1]);
    requests += 1;
  }
  return { ms: ms / steps, requests, steps };
}

describe('real llama-server: verify-step time', { skip }, () => {
  test("servelab's verifyStepMs matches the server's own eval time per target step", { timeout: 600_000 }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-llama-verify-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const logPath = join(dir, 'llama-server.log');
    const server = await launchServer({
      command: [
        LLAMA_SERVER!,
        '-m',
        LLAMA_MODEL!,
        '--host',
        '127.0.0.1',
        '--port',
        '{port}',
        '-np',
        '1',
        '--metrics',
        '-ngl',
        '99',
        ...speculate(LLAMA_DRAFT!),
      ],
      env: {},
      profile: BUILTIN_PROFILES.llamacpp!,
      logPath,
      readyTimeoutMs: 300_000,
    });
    t.after(() => server.stop());
    const requests = 6;
    const result = await runBenchmark({
      baseUrl: server.baseUrl,
      backend: 'llamacpp',
      workload: { kind: 'single-stream', requests },
      prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 32 }, outputTokens: { kind: 'fixed', value: 96 }, seed: 5 },
      warmupRequests: 0,
      ignoreEos: true,
      requestTimeoutMs: 300_000,
      specMetrics: 'auto',
    });
    const level = result.levels[0]!;
    assert.equal(level.failed, 0, JSON.stringify(level.errorsByKind));
    const measured = level.spec?.verifyStepMs;
    assert.ok(measured !== undefined, `no verify-step time: ${JSON.stringify(level.spec)}`);
    // The log block of the last request may land just after its response.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const own = serverVerifyStepMs(readFileSync(logPath, 'utf8'));
    t.diagnostic(
      `servelab verifyStepMs ${measured.toFixed(2)} ms (${level.spec?.verifySteps} steps, accepted length ${level.spec?.meanAcceptedLength?.toFixed(2)}); server ${own.ms.toFixed(2)} ms (${own.steps} steps over ${own.requests} requests); ratio ${(measured / own.ms).toFixed(5)}`,
    );
    assert.equal(own.requests, requests);
    assert.equal(level.spec?.verifySteps, own.steps, 'the same target steps');
    // The client's decode time adds only streaming of the last token: a few percent at most.
    assert.ok(Math.abs(measured / own.ms - 1) < 0.1, `servelab ${measured.toFixed(2)} ms vs server ${own.ms.toFixed(2)} ms`);
  });
});
