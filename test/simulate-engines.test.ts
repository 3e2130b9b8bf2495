/**
 * The engine personalities of the simulator (`simulate --engine vllm|sglang|llamacpp`) against servelab's profiles:
 * readiness reached, a dead engine detected at once, a refused cache reset caught, speculative stats read the way
 * each engine defines them. Startups run as real child processes; the rest in-process, each on its own port.
 */

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createParser } from 'eventsource-parser';
import { request } from 'undici';
import { resetCache, resetRefused } from '../src/experiment/run/cache.js';
import { launchServer } from '../src/launch/launch.js';
import type { ServerSpec } from '../src/launch/types.js';
import { BACKENDS, newStreamState } from '../src/load/backends.js';
import { watchLiveness } from '../src/load/liveness.js';
import { runBenchmark } from '../src/load/run.js';
import { specCountersFromMetrics, specFromCounterDelta } from '../src/load/spec.js';
import type { BenchOptions } from '../src/load/types.js';
import { formatBenchTable } from '../src/metrics/table.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import type { ServerProfile } from '../src/profiles/types.js';
import { NotReadyError } from '../src/ready/errors.js';
import { deadEngineDetail, probe } from '../src/ready/probe.js';
import { waitForReady } from '../src/ready/wait.js';
import { spawnSimulator } from '../src/simulate/child.js';
import type { SimConfigInput } from '../src/simulate/config.js';
import { expectedAcceptanceRate, expectedTokensPerStep } from '../src/simulate/model.js';
import { type SimulatorHandle, startSimulator } from '../src/simulate/server.js';

const profile = (name: string): ServerProfile => BUILTIN_PROFILES[name]!;
const FAST = ['--port', '0', '--jitter', '0', '--ttft-ms', '1', '--tpot-ms', '1'];

async function sim(t: TestContext, input: SimConfigInput, env: NodeJS.ProcessEnv = {}, log?: (line: string) => void): Promise<SimulatorHandle> {
  const handle = await startSimulator(
    { ...input, startup: { loadMs: 0, ...input.startup }, decode: { jitter: 0, ...input.decode } },
    { env, ...(log && { log }) },
  );
  t.after(() => handle.close());
  await handle.ready;
  return handle;
}

/** A streamed request left running in the background (it holds a batch slot, and cache blocks). */
function longRequest(url: string, path: string, body: object): { done: Promise<void> } {
  const done = request(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((response) =>
    response.body.dump(),
  );
  return { done };
}

/** Poll the simulator until `predicate` holds on its running count (bounded). */
async function untilRunning(url: string, predicate: (running: number) => boolean): Promise<void> {
  for (let attempt = 0; attempt < 250; attempt += 1) {
    const state = (await (await request(`${url}/sim/state`)).body.json()) as { running: number };
    if (predicate(state.running)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.fail('the simulator never reached the expected running count');
}

function benchOptions(url: string, overrides: Partial<BenchOptions>): BenchOptions {
  return {
    baseUrl: url,
    backend: 'openai-completions',
    workload: { kind: 'concurrency', concurrency: 4, requests: 16 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 10 }, outputTokens: { kind: 'fixed', value: 96 }, seed: 2 },
    warmupRequests: 1,
    ignoreEos: true,
    requestTimeoutMs: 20_000,
    specMetrics: 'auto',
    ...overrides,
  };
}

describe('pure health and reset readings', () => {
  test('a vLLM 503 is a dead engine; elsewhere a 503 is "starting" unless its body names a dead engine', () => {
    const empty503 = { status: 503, body: '' };
    assert.match(deadEngineDetail(empty503, profile('vllm'))!, /engine has died/);
    assert.equal(deadEngineDetail(empty503, profile('sglang')), undefined);
    assert.equal(deadEngineDetail(empty503, profile('simulator')), undefined, 'the default simulator answers 503 while loading');
    assert.match(deadEngineDetail({ status: 500, body: '{"detail":"EngineDeadError: EngineCore encountered an issue"}' }, profile('openai'))!, /dead engine/);
    assert.equal(deadEngineDetail({ status: 200, body: '' }, profile('vllm')), undefined);
  });

  test('a reset answer of {"success": false} is a refusal; SGLang plain text and vLLM success are not', () => {
    assert.equal(resetRefused('{"success": false}'), true);
    assert.equal(resetRefused('{"success": true}'), false);
    assert.equal(resetRefused('Cache flushed.\nPlease check backend logs for more details.'), false);
    assert.equal(resetRefused(''), false);
  });

  test("SGLang's adaptive tier gauges (sglang#25940) are read per scrape, the first rank's sample", () => {
    const counters = 'sglang:spec_verify_calls_total{tp_rank="0"} 5\nsglang:generation_tokens_total 20\nsglang:num_requests_total 1\n';
    const gauges =
      '# TYPE sglang:spec_num_steps gauge\nsglang:spec_num_steps{tp_rank="0"} 3.0\nsglang:spec_num_steps{tp_rank="1"} 3.0\nsglang:spec_num_draft_tokens{tp_rank="0"} 4.0\n';
    assert.deepEqual(specCountersFromMetrics(counters + gauges)?.tier, { numSteps: 3, numDraftTokens: 4 });
    assert.equal(specCountersFromMetrics(counters)?.tier, undefined, 'a server without adaptive gauges');
  });

  test('SGLang counters: accepted length (correct + verify) / verify, rate over verify x (speculative_num_draft_tokens - 1)', () => {
    const scrape = (verify: number, output: number, requests: number) =>
      `sglang:spec_verify_calls_total{model_name="m"} ${verify}\nsglang:generation_tokens_total{model_name="m"} ${output}\nsglang:num_requests_total{model_name="m"} ${requests}\n`;
    // 2 requests, 100 output tokens: 2 from prefill, 40 verify steps, so 58 accepted drafts of 40 x 3 proposed.
    const before = specCountersFromMetrics(scrape(10, 30, 1), 4)!;
    const after = specCountersFromMetrics(scrape(50, 130, 3), 4)!;
    const stats = specFromCounterDelta(before, after, 'test')!;
    assert.equal(stats.acceptedTokens, 58);
    assert.equal(stats.draftTokens, 120);
    assert.equal(stats.acceptanceRate, 58 / 120);
    assert.equal(stats.meanAcceptedLength, (58 + 40) / 40);
    const lengthOnly = specFromCounterDelta(specCountersFromMetrics(scrape(10, 30, 1))!, specCountersFromMetrics(scrape(50, 130, 3))!, 'test')!;
    assert.equal(lengthOnly.acceptanceRate, undefined, 'no draft length known: no rate');
    assert.equal(lengthOnly.meanAcceptedLength, (58 + 40) / 40);
  });
});

describe('vllm personality', () => {
  test('refuses connections while loading, logs a current vLLM startup, and is ready under the vllm profile', async (t) => {
    const server = await spawnSimulator(['--engine', 'vllm', '--load-ms', '1500', ...FAST]);
    t.after(() => server.stop());
    const early = await probe(`${server.url}/health`, { timeoutMs: 1000 });
    assert.equal(early.kind, 'no-answer');
    assert.match(early.kind === 'no-answer' ? early.detail : '', /connection refused/);
    const ready = await waitForReady({ baseUrl: server.url, profile: profile('vllm'), timeoutMs: 30_000 });
    assert.deepEqual(ready.checks, ['health', 'models', 'generation']);
    const output = server.output();
    for (const line of [/Dynamo bytecode transform time: [\d.]+ s/, /torch\.compile took [\d.]+ s in total/, /Starting vLLM server on http:\/\//]) {
      assert.match(output, line);
    }
    const health = await request(`${server.url}/health`);
    assert.equal(health.statusCode, 200);
    assert.equal(await health.body.text(), '', 'vLLM health has an empty body');
  });

  test('a dead engine (503 after serving) fails the wait at once, with the cause, instead of burning the timeout', async (t) => {
    const server = await spawnSimulator(['--engine', 'vllm', '--load-ms', '200', '--fail', 'oom', '--fail-at-ms', '500', ...FAST]);
    t.after(() => server.stop());
    await server.waitForLine(/EngineDeadError/, 20_000);
    const started = performance.now();
    const error = await waitForReady({ baseUrl: server.url, profile: profile('vllm'), timeoutMs: 60_000 }).then(
      () => assert.fail('a dead engine was called ready'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof NotReadyError);
    assert.equal(error.kind, 'engine-dead');
    assert.match(error.message, /503/);
    assert.ok(performance.now() - started < 10_000, 'failed at the first answer, not at the 60 s timeout');
  });

  test('a reset while a request holds blocks answers {"success": false}, and resetCache refuses the warm trial', async (t) => {
    const server = await sim(t, { engine: 'vllm', prefixCache: { enabled: true }, decode: { tpotMs: 20 } }, { VLLM_SERVER_DEV_MODE: '1' });
    const running = longRequest(server.url, '/v1/completions', { prompt: 'hold the blocks', max_tokens: 60, stream: true, ignore_eos: true });
    await untilRunning(server.url, (count) => count === 1);
    await assert.rejects(resetCache(server.url, '/reset_prefix_cache'), (error: Error & { hint?: string }) => {
      assert.match(error.message, /did not reset .*"success": ?false.*would run warm/);
      assert.match(error.hint ?? '', /vLLM/);
      return true;
    });
    await running.done;
    await resetCache(server.url, '/reset_prefix_cache');
  });

  test('without VLLM_SERVER_DEV_MODE the reset route does not exist, and the hint says so', async (t) => {
    const server = await sim(t, { engine: 'vllm' });
    await assert.rejects(resetCache(server.url, '/reset_prefix_cache'), (error: Error & { hint?: string }) => {
      assert.match(error.message, /HTTP 404/);
      assert.match(error.hint ?? '', /VLLM_SERVER_DEV_MODE=1/);
      return true;
    });
  });

  test('spec-decode counters carry the engine label and per-position acceptance; the default backend reads them', async (t) => {
    const server = await sim(t, { engine: 'vllm', decode: { tpotMs: 1, spec: { draftTokens: 3, acceptance: 0.6 } } });
    const metrics = await (await request(`${server.url}/metrics`)).body.text();
    assert.match(metrics, /vllm:spec_decode_num_accepted_tokens_per_pos_total\{engine="0",model_name="sim-llama-8b",position="2"\}/);
    const spec = (await runBenchmark(benchOptions(server.url, {}))).levels[0]!.spec!;
    assert.match(spec.source, /vllm prometheus/);
    assert.ok(Math.abs(spec.acceptanceRate! - expectedAcceptanceRate(server.config)!) < 0.08, `acceptance ${spec.acceptanceRate}`);
    assert.equal(spec.acceptanceByPosition?.length, 3);
  });

  test('with --per-request-spec-decode-metrics the responses carry the counts (vllm#48915); they agree with the counters', async (t) => {
    const server = await sim(t, {
      engine: 'vllm',
      vllm: { perRequestSpecDecodeMetrics: true },
      decode: { tpotMs: 1, spec: { draftTokens: 3, acceptance: 0.6 } },
    });
    const body = (await (
      await request(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'sim-llama-8b', prompt: 'hi', max_tokens: 8, ignore_eos: true }),
      })
    ).body.json()) as { metrics: { speculative_decoding: { num_spec_steps: number; num_draft_tokens: number; num_spec_tokens: number } } };
    const summary = body.metrics.speculative_decoding;
    assert.equal(summary.num_spec_tokens, 3);
    assert.equal(summary.num_draft_tokens, summary.num_spec_steps * 3);
    for (const backend of ['openai-completions', 'openai-chat'] as const) {
      const spec = (await runBenchmark(benchOptions(server.url, { backend }))).levels[0]!.spec!;
      assert.match(spec.source, /^vllm per-request metrics\.speculative_decoding .* \+ vllm prometheus/, backend);
      assert.ok(Math.abs(spec.acceptanceRate! - expectedAcceptanceRate(server.config)!) < 0.08, `${backend} acceptance ${spec.acceptanceRate}`);
      assert.ok(spec.verifySteps! > 0 && spec.verifyStepMs! >= 1, JSON.stringify(spec));
      assert.equal(spec.acceptanceByPosition?.length, 3, 'per-position acceptance still comes from the counters');
    }
  });
});

describe('sglang personality', () => {
  test('refuses connections while loading, answers 503 until warmed up, logs v0.5.15 capture lines, ready under the sglang profile', async (t) => {
    const server = await spawnSimulator(['--engine', 'sglang', '--load-ms', '2000', ...FAST]);
    t.after(() => server.stop());
    const early = await probe(`${server.url}/health`, { timeoutMs: 1000 });
    assert.equal(early.kind, 'no-answer', 'nothing listens while the scheduler loads');
    await server.waitForLine(/Uvicorn running on/, 20_000);
    const warming = await probe(`${server.url}/health`, { timeoutMs: 5000 });
    // The warm-up window is the last 10% of loading: the probe lands in it, or just after.
    if (warming.kind === 'answer' && warming.answer.status !== 200) assert.equal(warming.answer.status, 503);
    await waitForReady({ baseUrl: server.url, profile: profile('sglang'), timeoutMs: 30_000 });
    const output = server.output();
    assert.match(output, /Capture target decode CUDA graph begin\. backend=full, num_tokens_per_req=1, bs=\[1, 2, 4/);
    assert.match(output, /Capturing batches \(bs=\d+ avail_mem=/);
    assert.match(output, /The server is fired up and ready to roll!/);
  });

  test('/health waits for scheduler output: a 2 s probe flaps while a long prefill holds the batch, the profile timeout does not', async (t) => {
    const server = await sim(t, { engine: 'sglang', decode: { maxBatch: 1, ttftBaseMs: 3500, prefillMsPerToken: 0, tpotMs: 1 } });
    const busy = longRequest(server.url, '/generate', { text: 'a long prompt', sampling_params: { max_new_tokens: 2 }, stream: true });
    await untilRunning(server.url, (count) => count === 1);
    const short = await probe(`${server.url}/health`, { timeoutMs: 2000 });
    assert.equal(short.kind, 'no-answer', 'no scheduler output within 2 s: the old probe saw a timeout');
    const ready = await waitForReady({ baseUrl: server.url, profile: profile('sglang'), timeoutMs: 30_000, verifyServing: false });
    assert.deepEqual(ready.checks, ['health']);
    await busy.done;
  });

  test("liveness during a trial asks the profile's livenessPath: SGLang's /health (1 s at least) would look hung", async (t) => {
    const server = await sim(t, { engine: 'sglang', decode: { tpotMs: 10 } });
    const busy = longRequest(server.url, '/generate', { text: 'busy', sampling_params: { max_new_tokens: 400, ignore_eos: true }, stream: true });
    const onHealth = watchLiveness({ baseUrl: server.url, path: '/health' });
    const onLiveness = watchLiveness({ baseUrl: server.url, path: profile('sglang').livenessPath! });
    t.after(() => {
      onHealth.stop();
      onLiveness.stop();
    });
    await new Promise((resolve) => setTimeout(resolve, 4000));
    assert.match(onHealth.cause() ?? '', /answered nothing/, 'a 1 s probe of /health never gets its answer');
    assert.equal(onLiveness.cause(), undefined);
    await busy.done;
  });

  test('a dead scheduler behind a live HTTP server (sglang#6624): /v1/models answers on, the scheduler probe ends the watch', async (t) => {
    const server = await sim(t, { engine: 'sglang', startup: { loadMs: 50, failure: { kind: 'hang', atMs: 400 } } });
    const sglang = profile('sglang');
    const httpOnly = watchLiveness({ baseUrl: server.url, path: sglang.livenessPath! });
    const started = performance.now();
    const withScheduler = watchLiveness({
      baseUrl: server.url,
      path: sglang.livenessPath!,
      schedulerPaths: sglang.schedulerPaths!,
      schedulerUnansweredMs: 1_500,
    });
    t.after(() => {
      httpOnly.stop();
      withScheduler.stop();
    });
    await new Promise((resolve) => withScheduler.signal.addEventListener('abort', resolve));
    t.diagnostic(`scheduler declared dead ${Math.round(performance.now() - started)} ms after the watch began (hang at 400 ms)`);
    assert.match(withScheduler.cause()!, /the server answers HTTP but its scheduler has not answered \/server_info for 2 s/);
    const models = await probe(`${server.url}/v1/models`, { timeoutMs: 2000 });
    assert.equal(models.kind === 'answer' && models.answer.status, 200, 'the model list still answers');
    assert.equal(httpOnly.cause(), undefined, '/v1/models alone calls the server alive');
  });

  test("the scheduler probe falls back to an older name on a 404 (SGLang before #21463's /server_info)", async (t) => {
    const old = createServer((req, res) => {
      if (req.url === '/server_info') return void res.writeHead(404).end('{"detail":"Not Found"}');
      if (req.url === '/get_server_info') return; // a wedged scheduler: never answered
      res.writeHead(200).end('{"object":"list","data":[]}');
    });
    old.listen(0, '127.0.0.1');
    await once(old, 'listening');
    t.after(() => {
      old.closeAllConnections();
      old.close();
    });
    const url = `http://127.0.0.1:${(old.address() as AddressInfo).port}`;
    const watch = watchLiveness({ baseUrl: url, path: '/v1/models', schedulerPaths: profile('sglang').schedulerPaths!, schedulerUnansweredMs: 1_000 });
    t.after(() => watch.stop());
    await new Promise((resolve) => watch.signal.addEventListener('abort', resolve));
    assert.match(watch.cause()!, /has not answered \/get_server_info/);
  });

  test('SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0: /health answers 503 while starting, then 200 at once; /health_generate still generates', async (t) => {
    const env = { SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: '0' };
    const server = await startSimulator({ engine: 'sglang', startup: { loadMs: 2000 }, decode: { jitter: 0, tpotMs: 1 } }, { env });
    t.after(() => server.close());
    // It listens for the last 10% of loading (the warm-up): the first answer comes from that window.
    let first: Awaited<ReturnType<typeof probe>> | undefined;
    for (let attempt = 0; attempt < 200 && first?.kind !== 'answer'; attempt += 1) {
      first = await probe(`${server.url}/health`, { timeoutMs: 1000 });
      if (first.kind !== 'answer') await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(first?.kind === 'answer' && first.answer.status, 503, 'no 200 before the warm-up finished');
    await server.ready;
    const timed = async (path: string) => {
      const started = performance.now();
      const answer = await probe(`${server.url}${path}`, { timeoutMs: 5000 });
      return { status: answer.kind === 'answer' ? answer.answer.status : answer.detail, ms: performance.now() - started };
    };
    const health = await timed('/health');
    assert.equal(health.status, 200);
    assert.ok(health.ms < 500, `/health took ${health.ms} ms`);
    const generating = await timed('/health_generate');
    assert.equal(generating.status, 200);
    assert.ok(generating.ms >= 900, `/health_generate took ${generating.ms} ms: it waits for its first 1 s poll`);
    // servelab's readiness still proves serving with its own generation.
    const ready = await waitForReady({ baseUrl: server.url, profile: profile('sglang'), timeoutMs: 30_000 });
    assert.deepEqual(ready.checks, ['health', 'models', 'generation']);
    assert.ok(ready.elapsedMs < 900, `ready in ${ready.elapsedMs} ms`);
  });

  test('an SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION that is no boolean is warned about, and /health generates as by default', async (t) => {
    const lines: string[] = [];
    const server = await sim(t, { engine: 'sglang', decode: { tpotMs: 1 } }, { SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: 'off' }, (line) => lines.push(line));
    assert.ok(lines.some((line) => /Invalid value for SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: "off".*using default "True"/.test(line)));
    const started = performance.now();
    const answer = await probe(`${server.url}/health`, { timeoutMs: 5000 });
    assert.equal(answer.kind === 'answer' && answer.answer.status, 200);
    assert.ok(performance.now() - started >= 900, 'it generated and waited for its first 1 s poll');
  });

  test('/health answers 503 after SGLANG_HEALTH_CHECK_TIMEOUT when the scheduler is hung', async (t) => {
    const server = await sim(t, { engine: 'sglang', startup: { failure: { kind: 'hang', atMs: 50 } }, sglang: { healthCheckTimeoutMs: 300 } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const answer = await probe(`${server.url}/health`, { timeoutMs: 5000 });
    assert.equal(answer.kind === 'answer' && answer.answer.status, 503);
  });

  test('/flush_cache answers 400 while a request runs; with ?timeout= it waits for it; resetCache names SGLang', async (t) => {
    const server = await sim(t, { engine: 'sglang', prefixCache: { enabled: true }, decode: { tpotMs: 10 } });
    const running = longRequest(server.url, '/generate', { text: 'busy', sampling_params: { max_new_tokens: 50, ignore_eos: true }, stream: true });
    await untilRunning(server.url, (count) => count === 1);
    await assert.rejects(resetCache(server.url, '/flush_cache'), (error: Error & { hint?: string }) => {
      assert.match(error.message, /HTTP 400.*would run warm/);
      assert.match(error.hint ?? '', /SGLang/);
      assert.doesNotMatch(error.hint ?? '', /vLLM|VLLM/);
      return true;
    });
    const reset = profile('sglang').cacheReset;
    assert.ok(reset?.kind === 'endpoint' && reset.path.includes('timeout='));
    await resetCache(server.url, reset.path);
    await running.done;
  });

  test('speculative stats on the default backend, from /metrics counter deltas, agree with the native per-request ones', async (t) => {
    const lines: string[] = [];
    const server = await sim(t, { engine: 'sglang', statsIntervalMs: 200, decode: { tpotMs: 1, spec: { draftTokens: 3, acceptance: 0.6 } } }, {}, (line) =>
      lines.push(line),
    );
    const rate = expectedAcceptanceRate(server.config)!;
    const length = expectedTokensPerStep(server.config);
    const result = await runBenchmark(benchOptions(server.url, {}));
    const openai = result.levels[0]!.spec!;
    assert.match(openai.source, /sglang prometheus counters/);
    // The tier in force beside acceptance: the simulator's is fixed (3 draft steps, 4 draft tokens).
    assert.deepEqual(openai.adaptiveTier, { numSteps: 3, numDraftTokens: 4, changed: false });
    assert.match(formatBenchTable(result), /\d+%\/[\d.]+\/[\d.]+ s3\/d4[\s\S]*spec tier: sN\/dM/);
    assert.ok(Math.abs(openai.acceptanceRate! - rate) < 0.08, `acceptance ${openai.acceptanceRate} vs ${rate}`);
    assert.ok(Math.abs(openai.meanAcceptedLength! - length) < 0.25, `accepted length ${openai.meanAcceptedLength} vs ${length}`);
    const native = (await runBenchmark(benchOptions(server.url, { backend: 'sglang' }))).levels[0]!.spec!;
    assert.match(native.source, /^sglang meta_info \(correct drafts/);
    assert.ok(Math.abs(native.acceptanceRate! - rate) < 0.08, `native acceptance ${native.acceptanceRate} vs ${rate}`);
    assert.ok(Math.abs(native.meanAcceptedLength! - length) < 0.25, `native accepted length ${native.meanAcceptedLength} vs ${length}`);
    // Verify steps from spec_verify_calls (counters) and spec_verify_ct (meta_info); each step costs at least its tpot.
    for (const stats of [openai, native]) assert.ok(stats.verifySteps! > 0 && stats.verifyStepMs! >= 1, JSON.stringify(stats));
    const info = (await (await request(`${server.url}/server_info`)).body.json()) as { speculative_num_draft_tokens: number };
    assert.equal(info.speculative_num_draft_tokens, 4);
    assert.ok(
      lines.some((line) => /^\[[\d-]+ [\d:]+ TP0\] Decode batch, .*accept len: [\d.]+, accept rate: [\d.]+, .*gen throughput/.test(line)),
      lines.join('\n'),
    );
  });

  for (const incremental of [false, true]) {
    test(`the native backend reads every token of ${incremental ? 'incremental' : 'cumulative'} streaming output`, async (t) => {
      const server = await sim(t, { engine: 'sglang', sglang: { incrementalStreamingOutput: incremental }, decode: { tpotMs: 0 } });
      const response = await request(`${server.url}/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ text: 'count', sampling_params: { max_new_tokens: 40, ignore_eos: true }, stream: true }),
      });
      const payloads: string[] = [];
      const parser = createParser({ onEvent: (event) => void payloads.push(event.data) });
      for await (const chunk of response.body) parser.feed(chunk.toString());
      const state = newStreamState(true);
      for (const data of payloads) BACKENDS.sglang.parse(data, state);
      const finals = payloads.filter((data) => data !== '[DONE]').map((data) => JSON.parse(data) as { text: string });
      const whole = incremental ? finals.map((event) => event.text).join('') : finals.at(-1)!.text;
      assert.equal(state.text, whole);
      assert.equal(state.tokenEvents, 40);
      assert.equal(state.completionTokens, 40);
    });
  }
});

describe('launch under the engine profiles', () => {
  const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
  const spec = (t: TestContext, name: string, args: string[]): ServerSpec => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-engines-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    return {
      command: [process.execPath, BIN, 'simulate', '--port', '{port}', '--jitter', '0', '--ttft-ms', '1', '--tpot-ms', '1', ...args],
      env: {},
      profile: profile(name),
      logPath: join(dir, 'server.log'),
      readyTimeoutMs: 30_000,
    };
  };

  test('vllm: ready, with the startup phases read from its current log lines', async (t) => {
    const server = await launchServer(spec(t, 'vllm', ['--engine', 'vllm', '--load-ms', '800']));
    t.after(() => server.stop());
    const phases = server.ready.phases.map((phase) => phase.phase);
    for (const phase of ['loading model', 'loading weights', 'weights loaded', 'capturing CUDA graphs', 'Uvicorn running']) {
      assert.ok(phases.includes(phase), `${phase} in ${phases.join(', ')}`);
    }
  });

  test('sglang: a scheduler crash while loading ends the launch at once with its cause', async (t) => {
    const started = performance.now();
    const error = await launchServer(spec(t, 'sglang', ['--engine', 'sglang', '--load-ms', '20000', '--fail', 'crash', '--fail-at-ms', '300'])).then(
      async (server) => {
        await server.stop();
        assert.fail('a crashed server was called ready');
      },
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof NotReadyError);
    assert.match(error.message, /scheduler died|exited/);
    assert.ok(performance.now() - started < 15_000, 'not the 20 s load nor the 30 s timeout');
  });
});

describe('llamacpp personality', () => {
  test('behaves as the default simulator: ready under the llamacpp profile', async (t) => {
    const server = await spawnSimulator(['--engine', 'llamacpp', '--load-ms', '300', ...FAST]);
    t.after(() => server.stop());
    const ready = await waitForReady({ baseUrl: server.url, profile: profile('llamacpp'), timeoutMs: 30_000 });
    assert.deepEqual(ready.checks, ['health', 'models', 'generation']);
  });
});
