/** Client options as one typed object: what a remote client is told (benchArgv) is what `servelab bench` parses. */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseBenchArgv } from '../src/cli/commands/bench.js';
import { benchArgv } from '../src/exec/remote-bench.js';
import { benchOptionsOf } from '../src/experiment/run/trial.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import type { RunningServer } from '../src/launch/types.js';
import type { ClientOptions } from '../src/load/types.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';

/** The fields bench's flag parsing always writes, at the values most cases keep. */
const BENCH_DEFAULTS = {
  ignoreEos: true,
  requireFullOutput: true,
  maxFailedFraction: 0,
  requestTimeoutMs: 60_000,
  specMetrics: 'auto',
  workers: 1,
} as const satisfies Partial<ClientOptions>;

/** Every field set, as bench's flag parsing writes them (requireFullOutput, maxFailedFraction and workers always). */
const CASES: ClientOptions[] = [
  {
    backend: 'openai-chat',
    model: 'm',
    workload: { kind: 'sweep', concurrencies: [1, 4], requestsPerLevel: 16 },
    prompts: {
      kind: 'synthetic',
      inputTokens: { kind: 'normal', mean: 100, stddev: 10, min: 5, max: 300 },
      outputTokens: { kind: 'fixed', value: 32 },
      seed: 3,
    },
    promptSalt: 7,
    cachePrompt: false,
    keepAlive: false,
    warmupRequests: 2,
    warmupPerLevel: true,
    ignoreEos: false,
    requireFullOutput: false,
    tokenCounts: 'stream',
    maxFailedFraction: 0.05,
    requestTimeoutMs: 60_000,
    slo: { ttftMs: 200, tpotMs: 20, e2eMs: 5000 },
    tokenizerPath: '/models/tok.json',
    contextTokens: 32768,
    specMetrics: 'none',
    workers: 'auto',
  },
  {
    backend: 'openai-completions',
    workload: { kind: 'rate', requestsPerSecond: 2.5, arrival: 'constant', maxInFlight: 8, requests: 40 },
    prompts: { kind: 'jsonl', path: '/data/p.jsonl', seed: 0, maxOutputTokens: 64, shuffle: true, fields: { prompt: 'question' } },
    warmupRequests: 0,
    warmupPerLevel: false,
    ignoreEos: true,
    requireFullOutput: true,
    maxFailedFraction: 0,
    requestTimeoutMs: 1500,
    specMetrics: 'auto',
    workers: 1,
  },
  {
    backend: 'llamacpp',
    workload: { kind: 'single-stream', requests: 8 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'uniform', min: 2, max: 9 }, outputTokens: { kind: 'fixed', value: 128 }, seed: 0 },
    warmupRequests: 1,
    warmupMs: 2500,
    warmupPerLevel: false,
    ignoreEos: true,
    requireFullOutput: true,
    tokenCounts: 'usage',
    maxFailedFraction: 1,
    requestTimeoutMs: 60_000,
    specMetrics: 'auto',
    workers: 4,
  },
  {
    backend: 'openai-chat',
    workload: { kind: 'rate', requestsPerSecond: 3, arrival: 'gamma', burstiness: 0.25, maxInFlight: 16, requests: 30 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 64 }, outputTokens: { kind: 'fixed', value: 16 }, seed: 5 },
    warmupRequests: 2,
    warmupPerLevel: true,
    ...BENCH_DEFAULTS,
  },
  {
    backend: 'openai-completions',
    workload: { kind: 'trace', maxInFlight: 32, requests: 10 },
    prompts: {
      kind: 'trace',
      path: '/traces/mooncake_trace.jsonl',
      format: 'mooncake',
      speedup: 2.5,
      window: { startMs: 0, endMs: 90_500 },
      seed: 4,
      maxOutputTokens: 256,
    },
    warmupRequests: 1,
    warmupPerLevel: true,
    ...BENCH_DEFAULTS,
  },
  {
    backend: 'openai-chat',
    workload: { kind: 'trace', maxInFlight: 256 },
    prompts: { kind: 'trace', path: '/traces/BurstGPT_1.csv', format: 'burstgpt', window: { startMs: 600_000 }, seed: 0 },
    warmupRequests: 0,
    warmupPerLevel: false,
    ...BENCH_DEFAULTS,
  },
  {
    // A trace's lengths under another workload: no arrival times.
    backend: 'openai-completions',
    workload: { kind: 'concurrency', concurrency: 4, requests: 12 },
    prompts: { kind: 'trace', path: '/traces/azure_code.csv', format: 'azure', seed: 0 },
    warmupRequests: 1,
    warmupPerLevel: true,
    ...BENCH_DEFAULTS,
  },
  {
    backend: 'openai-chat',
    workload: { kind: 'concurrency', concurrency: 4, requests: 24 },
    prompts: {
      kind: 'sessions',
      turns: 3,
      inputTokens: { kind: 'fixed', value: 40 },
      outputTokens: { kind: 'fixed', value: 16 },
      thinkTime: { kind: 'exponential', meanMs: 1500 },
      path: '/data/chats.json',
      seed: 2,
    },
    warmupRequests: 1,
    warmupPerLevel: true,
    ...BENCH_DEFAULTS,
  },
  {
    backend: 'openai-completions',
    workload: { kind: 'sweep', concurrencies: [1, 4], requestsPerLevel: 64 },
    prompts: {
      kind: 'shared-prefix',
      prefixes: 4,
      prefixTokens: 1024,
      questionsPerPrefix: 16,
      questionTokens: 64,
      outputTokens: { kind: 'fixed', value: 32 },
      seed: 1,
    },
    promptSalt: 3,
    warmupRequests: 1,
    warmupPerLevel: true,
    ...BENCH_DEFAULTS,
  },
];

test('object → benchArgv → bench flag parsing → the same object', () => {
  for (const options of CASES) {
    const parsed = parseBenchArgv(benchArgv({ ...options, requestTimeoutSetting: 'client.requestTimeout' }, 'http://h:8000', 'result.json'));
    assert.equal(parsed.url, 'http://h:8000');
    assert.equal(parsed.requestTimeoutSetting, 'client.requestTimeout');
    assert.deepEqual(parsed.options, options);
  }
});

test('no maxFailedFraction: the remote client never stops a level early (the caller judges validity)', () => {
  const { maxFailedFraction: _, ...options } = CASES[1]!;
  assert.equal(parseBenchArgv(benchArgv(options, 'http://h:8000', 'r.json')).options.maxFailedFraction, 1);
});

test('experiment file: client.requireFullOutput and client.tokenCounts, per variant too', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-client-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'exp.yaml');
  writeFileSync(
    path,
    `name: e
profile: vllm
server:
  command: vllm serve m --port {port}
workloads: [{ kind: single-stream, requests: 8 }]
client: { requireFullOutput: false }
variants:
  a: {}
  b: { client: { tokenCounts: stream } }
`,
  );
  const [a, b] = loadExperiment(path).variants;
  assert.deepEqual([a!.client.requireFullOutput, a!.client.tokenCounts], [false, undefined]);
  assert.deepEqual([b!.client.requireFullOutput, b!.client.tokenCounts], [false, 'stream']);
  writeFileSync(path, `name: e\nprofile: vllm\nserver: { command: x }\nworkloads: [{ kind: single-stream, requests: 8 }]\nclient: { tokenCounts: guess }\n`);
  assert.throws(() => loadExperiment(path), /client\.tokenCounts/);
});

test('experiment file: sessions and shared prefixes as client.prompts; sessions refuse an open-loop rate', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-client-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'exp.yaml');
  const file = (workload: string) =>
    `name: e
profile: vllm
server:
  command: vllm serve m --port {port}
workloads: [${workload}]
client: { prompts: { kind: sessions, turns: 4, thinkTime: exponential:2s } }
variants:
  chat: {}
  rag: { client: { prompts: { kind: shared-prefix, prefixes: 4 } } }
`;
  writeFileSync(path, file('{ kind: concurrency, concurrency: 8, requests: 64 }'));
  const [chat, rag] = loadExperiment(path).variants;
  assert.deepEqual(chat!.client.prompts, {
    kind: 'sessions',
    turns: 4,
    inputTokens: { kind: 'fixed', value: 256 },
    outputTokens: { kind: 'fixed', value: 128 },
    thinkTime: { kind: 'exponential', meanMs: 2000 },
    seed: 0,
  });
  assert.deepEqual(rag!.client.prompts, {
    kind: 'shared-prefix',
    prefixes: 4,
    prefixTokens: 1024,
    questionsPerPrefix: 16,
    questionTokens: 64,
    outputTokens: { kind: 'fixed', value: 128 },
    seed: 0,
  });
  writeFileSync(path, file('{ kind: rate, requestsPerSecond: 4, requests: 40 }'));
  // Found after the schema check, and still located: the file's line of the key.
  assert.throws(() => loadExperiment(path), /exp\.yaml:5: workloads: variant "chat" runs multi-turn sessions, which need a closed loop: "rate=4\/s" is a rate/);
  writeFileSync(path, file('{ kind: single-stream, requests: 8 }').replace('thinkTime: exponential:2s', 'thinkTime: soon'));
  assert.throws(() => loadExperiment(path), /thinkTime.*invalid think time "soon"/);
  // A trace's speedup times arrivals that only a trace workload replays: with lengths only, it would be ignored.
  const trace = (workload: string) =>
    file(workload).replace('{ kind: sessions, turns: 4, thinkTime: exponential:2s }', '{ kind: trace, path: t.jsonl, format: mooncake, speedup: 2 }');
  writeFileSync(join(dir, 't.jsonl'), '{"timestamp": 0, "input_length": 8, "output_length": 4, "hash_ids": [1]}\n');
  writeFileSync(path, trace('{ kind: concurrency, concurrency: 8, requests: 64 }'));
  assert.throws(
    () => loadExperiment(path),
    /exp\.yaml:6: client\.prompts\.speedup.*no workload replays them: a trace workload replays the trace it names \(\{ kind: trace, trace: \{ path, format, speedup \} \}\); here drop speedup/,
  );
});

test('experiment file: a trace workload owns the trace it replays; the form before that still loads; a replay of no trace is refused at load', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-client-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'exp.yaml');
  writeFileSync(join(dir, 't.jsonl'), '{"timestamp": 0, "input_length": 8, "output_length": 4}\n{"timestamp": 500, "input_length": 8, "output_length": 4}\n');
  const file = (workloads: string, client = '') =>
    `name: e\nprofile: vllm\nserver:\n  command: vllm serve m --port {port}\nworkloads: [${workloads}]\n${client}`;
  const replay = (trace: string) => `{ kind: trace, trace: { ${trace} }, maxInFlight: 8 }`;
  const trace = { kind: 'trace', path: join(dir, 't.jsonl'), format: 'mooncake', speedup: 2, seed: 0 };

  writeFileSync(path, file(`${replay('path: t.jsonl, format: mooncake, speedup: 2')}, { kind: concurrency, concurrency: 2, requests: 2 }`));
  const owned = loadExperiment(path);
  assert.deepEqual(owned.workloads[0]!.workload, { kind: 'trace', maxInFlight: 8 });
  assert.deepEqual(owned.workloads[0]!.prompts, trace);
  assert.equal(owned.workloads[1]!.prompts, undefined, "other workloads send the variant's prompts");
  assert.equal(owned.variants[0]!.client.prompts.kind, 'synthetic');
  // What a trial of it sends: the workload's trace, whatever the variant's client.prompts.
  const server = { baseUrl: 'http://127.0.0.1:1', ready: {} } as unknown as RunningServer;
  assert.deepEqual(benchOptionsOf(owned.variants[0]!, owned.workloads[0]!, BUILTIN_PROFILES.vllm!, server, { record: 'warm' }).prompts, trace);

  // Written before a trace workload named its trace: the variants' one client.prompts trace is what it replays.
  writeFileSync(path, file('{ kind: trace, maxInFlight: 8 }', 'client: { prompts: { kind: trace, path: t.jsonl, format: mooncake, speedup: 2 } }\n'));
  const before = loadExperiment(path);
  assert.deepEqual(before.workloads[0]!.prompts, trace);
  assert.deepEqual(before.variants[0]!.client.prompts, trace);

  // A trace workload over prompts that are no trace: refused as the file loads (it failed only once the server was up).
  writeFileSync(path, file('{ kind: trace, maxInFlight: 8 }'));
  assert.throws(
    () => loadExperiment(path),
    /exp\.yaml:5: workloads\[0\]: a trace workload replays the trace it names \(client\.prompts is synthetic, not a trace\): write \{ kind: trace, trace: \{ path: FILE, format: mooncake\|burstgpt\|azure \}, maxInFlight: … \}/,
  );
  writeFileSync(
    path,
    file(
      '{ kind: trace, maxInFlight: 8 }',
      'client: { prompts: { kind: trace, path: t.jsonl, format: mooncake } }\nvariants:\n  a: {}\n  b: { client: { prompts: { kind: trace, path: t.jsonl, format: burstgpt } } }\n',
    ),
  );
  assert.throws(() => loadExperiment(path), /workloads\[0\]: a trace workload replays the trace it names \(the variants name different traces\)/);
  // The trace's own keys are checked and located like any other.
  writeFileSync(path, file(replay('path: t.jsonl, format: mooncake, speedpu: 2')));
  assert.throws(() => loadExperiment(path), /exp\.yaml:5: workloads\[0\]\.trace\.speedpu: unknown key "speedpu" \(did you mean "speedup"\?\)/);
  writeFileSync(path, file(replay('path: gone.jsonl, format: mooncake')));
  assert.throws(() => loadExperiment(path), /workloads\[0\]\.trace\.path: no such file: .*gone\.jsonl/);
  writeFileSync(path, file(`${replay('path: t.jsonl, format: mooncake')}`).replace('maxInFlight: 8 }', 'maxInFlight: 8, requests: 5 }'));
  assert.throws(() => loadExperiment(path), /workloads\[0\]\.trace\.path: .*holds 2 requests, fewer than the 5 workload "trace" asks for/);
});
