/** Trace replay without a server: the three readers, located errors, windows, prompt blocks, flags and files. */

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseBenchArgv } from '../src/cli/commands/bench.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { runBenchmark } from '../src/load/run.js';
import { loadTokenizer } from '../src/load/tokenizers/model.js';
import { dateTimeMs, readTrace } from '../src/load/trace/parse.js';
import { TRACE_BLOCK_TOKENS, traceItems, windowed } from '../src/load/trace/prompts.js';
import type { TraceFormat } from '../src/load/trace/types.js';
import { UserError } from '../src/util/errors.js';
import { tempDir, writeExperiment } from './support-experiment.js';

const SAMPLES = fileURLToPath(new URL('../../examples/traces/', import.meta.url));
const MOONCAKE = join(SAMPLES, 'mooncake-sample.jsonl');
const BURSTGPT = join(SAMPLES, 'burstgpt-sample.csv');
const AZURE = join(SAMPLES, 'azure-sample.csv');
const BPE_DIR = fileURLToPath(new URL('../../test/fixtures/tokenizers/bpe', import.meta.url));

describe('trace readers', () => {
  test('the samples read in each published format', async () => {
    const mooncake = readTrace(MOONCAKE, 'mooncake');
    assert.equal(mooncake.length, 24);
    assert.deepEqual(Object.keys(mooncake[0]!).sort(), ['hashIds', 'inputTokens', 'outputTokens', 'timestampMs', 'where']);
    assert.match(mooncake[0]!.where, /mooncake-sample\.jsonl:1$/);
    const burst = readTrace(BURSTGPT, 'burstgpt');
    assert.equal(burst.length, 30);
    // Seconds in the file, ms in the record; the failed request (Response tokens 0) is kept.
    assert.equal(burst[0]!.timestampMs, 132);
    assert.equal(burst[7]!.outputTokens, 0);
    const azure = readTrace(AZURE, 'azure');
    assert.equal(azure.length, 30);
    assert.equal(azure[0]!.inputTokens, 481);
  });

  test('Azure date-times keep sub-millisecond digits; UTC unless an offset is given', () => {
    assert.equal(dateTimeMs('2023-11-16 18:17:03.9799600'), Date.UTC(2023, 10, 16, 18, 17, 3) + 979.96);
    assert.equal(dateTimeMs('2024-05-10 00:00:00.5+01:00'), Date.UTC(2024, 4, 9, 23, 0, 0) + 500);
    assert.equal(dateTimeMs('2023-11-16T18:17:03Z'), Date.UTC(2023, 10, 16, 18, 17, 3));
    assert.equal(dateTimeMs('16/11/2023 18:17'), undefined);
    assert.equal(dateTimeMs('2023-13-16 18:17:03'), undefined);
  });

  test('a bad row is named by file, line, field and what was expected', async (t) => {
    const dir = tempDir(t, 'trace-bad');
    const cases: Array<[string, TraceFormat, string, RegExp]> = [
      [
        'm.jsonl',
        'mooncake',
        '{"timestamp": 0, "input_length": 10, "output_length": 2}\n\n{"timestamp": 5, "input_length": "ten", "output_length": 2}\n',
        /m\.jsonl:3: field "input_length" must be a positive integer, got "ten"/,
      ],
      ['j.jsonl', 'mooncake', '{"timestamp": 0, "input_length": 10, "output_length": 2}\n{"timestamp": 1,\n', /j\.jsonl:2: not valid JSON/],
      [
        'h.jsonl',
        'mooncake',
        '{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1, -2]}\n',
        /h\.jsonl:1: field "hash_ids" must be an array of block ids/,
      ],
      ['t.jsonl', 'mooncake', '{"input_length": 10, "output_length": 2}\n', /t\.jsonl:1: field "timestamp" must be a time in ms >= 0, got null/],
      [
        'b.csv',
        'burstgpt',
        'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,10,2,12,API log\n2,ChatGPT,10,2,12,API log\nsoon,ChatGPT,10,2,12,API log\n',
        /b\.csv:4: field "Timestamp" must be a time in seconds >= 0, got "soon"/,
      ],
      [
        'r.csv',
        'burstgpt',
        'Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,10,-1,9,API log\n',
        /r\.csv:2: field "Response tokens" must be an integer >= 0, got "-1"/,
      ],
      [
        'a.csv',
        'azure',
        'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03.9799600,4808,10\nyesterday,3180,8\n',
        /a\.csv:3: field "TIMESTAMP" must be a date-time like 2023-11-16 18:17:03\.9799600, got "yesterday"/,
      ],
      [
        'huge.jsonl',
        'mooncake',
        '{"timestamp": 0, "input_length": 10, "output_length": 2}\n{"timestamp": 5, "input_length": 1000000000, "output_length": 2}\n',
        /huge\.jsonl:2: 1000000000 prompt \+ 2 output tokens exceed servelab's cap of 1048576 tokens per request/,
      ],
      ['c.csv', 'azure', 'TIMESTAMP,Context,GeneratedTokens\n2023-11-16 18:17:03,4808,10\n', /c\.csv:1: the header has no column "ContextTokens"/],
      ['w.csv', 'burstgpt', 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:17:03,4808,10\n', /w\.csv:1: the header has no column "Timestamp"/],
    ];
    for (const [name, format, text, message] of cases) {
      const path = join(dir, name);
      writeFileSync(path, text);
      assert.throws(
        () => readTrace(path, format),
        (error: unknown) => error instanceof UserError && message.test(error.message),
        name,
      );
    }
  });
});

describe('replayed prompts', () => {
  test('window and speedup: arrivals from the window’s first request, divided by the speedup', async () => {
    const records = readTrace(MOONCAKE, 'mooncake');
    const first = records[0]!.timestampMs;
    const inWindow = records.filter((record) => record.timestampMs - first >= 1000 && record.timestampMs - first < 4000);
    assert.ok(inWindow.length > 3 && inWindow.length < records.length);
    assert.deepEqual(windowed(records, { startMs: 1000, endMs: 4000 }), inWindow);
    const items = await traceItems({ kind: 'trace', path: MOONCAKE, format: 'mooncake', speedup: 2, window: { startMs: 1000, endMs: 4000 } }, { chat: false });
    assert.deepEqual(
      items.map((item) => item.arrivalMs),
      inWindow.map((record) => (record.timestampMs - inWindow[0]!.timestampMs) / 2),
    );
    assert.deepEqual(
      items.map((item) => [item.inputTokens, item.maxTokens]),
      inWindow.map((record) => [record.inputTokens, record.outputTokens]),
    );
    await assert.rejects(
      traceItems({ kind: 'trace', path: MOONCAKE, format: 'mooncake', window: { startMs: 3_600_000 } }, { chat: false }),
      /holds no requests in the window/,
    );
  });

  test('shared leading hash ids give identical leading words; the rest is the request’s own', async () => {
    const records = readTrace(MOONCAKE, 'mooncake');
    const items = await traceItems({ kind: 'trace', path: MOONCAKE, format: 'mooncake' }, { chat: false });
    const words = items.map((item) => item.prompt.split(' '));
    words.forEach((list, index) => assert.equal(list.length, records[index]!.inputTokens));
    // Requests 0 and 3 open with blocks [0, 1]; request 1 with [2]: two blocks shared, then different.
    assert.deepEqual(records[0]!.hashIds!.slice(0, 2), records[3]!.hashIds!.slice(0, 2));
    const shared = 2 * TRACE_BLOCK_TOKENS;
    assert.deepEqual(words[0]!.slice(0, shared), words[3]!.slice(0, shared));
    assert.notDeepEqual(words[0]!.slice(shared, shared + 32), words[3]!.slice(shared, shared + 32));
    assert.notDeepEqual(words[0]!.slice(0, 32), words[1]!.slice(0, 32));
    // The same seed, the same text: a rerun hits the same blocks.
    const again = await traceItems({ kind: 'trace', path: MOONCAKE, format: 'mooncake' }, { chat: false });
    assert.equal(again[5]!.prompt, items[5]!.prompt);
  });

  test('with a tokenizer: exactly the recorded input tokens, the shared blocks still shared', async () => {
    const tokenizer = loadTokenizer(BPE_DIR);
    const items = await traceItems({ kind: 'trace', path: MOONCAKE, format: 'mooncake', window: { startMs: 0, endMs: 2000 } }, { tokenizer, chat: false });
    const records = windowed(readTrace(MOONCAKE, 'mooncake'), { startMs: 0, endMs: 2000 });
    items.forEach((item, index) => assert.equal(tokenizer.count(item.prompt), records[index]!.inputTokens));
    const sharing = records.findIndex((record, index) => index > 0 && record.hashIds![0] === records[0]!.hashIds![0]);
    assert.ok(sharing > 0);
    const prefix = items[0]!.prompt.split(' ').slice(0, TRACE_BLOCK_TOKENS).join(' ');
    assert.ok(items[sharing]!.prompt.startsWith(prefix));
  });

  test('a failed request of the trace (0 output tokens) asks for one; maxOutputTokens caps the rest', async () => {
    const items = await traceItems({ kind: 'trace', path: BURSTGPT, format: 'burstgpt', maxOutputTokens: 5 }, { chat: false });
    assert.equal(items[7]!.maxTokens, 1);
    assert.ok(items.every((item) => item.maxTokens >= 1 && item.maxTokens <= 5));
  });
});

describe('trace options', () => {
  const argv = (...flags: string[]) => parseBenchArgv(['bench', 'http://h:8000', ...flags]).options;

  test('--trace alone replays arrivals; with another workload flag only the lengths', () => {
    const replay = argv('--trace', MOONCAKE, '--trace-speedup', '3', '--trace-start', '1s', '--trace-duration', '2s', '--max-in-flight', '16');
    assert.deepEqual(replay.workload, { kind: 'trace', maxInFlight: 16 });
    assert.deepEqual(replay.prompts, { kind: 'trace', path: MOONCAKE, format: 'mooncake', speedup: 3, window: { startMs: 1000, endMs: 3000 }, seed: 0 });
    assert.deepEqual(argv('--trace', BURSTGPT, '--trace-format', 'burstgpt', '--trace-window', '2m,').prompts, {
      kind: 'trace',
      path: BURSTGPT,
      format: 'burstgpt',
      window: { startMs: 120_000 },
      seed: 0,
    });
    assert.equal(argv('--trace', AZURE, '--trace-format', 'azure', '--concurrency', '4').workload.kind, 'concurrency');
  });

  test('usage errors: a CSV without its format, two windows, an empty window, a dataset and a trace', () => {
    const usage = (message: RegExp) => (error: unknown) => error instanceof UserError && error.exitCode === 2 && message.test(error.message);
    assert.throws(() => argv('--trace', AZURE), usage(/--trace needs --trace-format/));
    assert.throws(() => argv('--trace', MOONCAKE, '--trace-window', '1s,2s', '--trace-start', '1s'), usage(/alternatives/));
    assert.throws(() => argv('--trace', MOONCAKE, '--trace-window', '5s,2s'), usage(/--trace-window: end must be after start/));
    assert.throws(() => argv('--trace', MOONCAKE, '--trace-speedup', '0'), usage(/--trace-speedup must be a positive number/));
    assert.throws(() => argv('--trace', MOONCAKE, '--dataset', 'x.jsonl'), usage(/--dataset and --trace are alternatives/));
  });

  test('trace flags never silently ignored: without --trace, beside sessions or shared prefixes, a speedup of arrivals not replayed', () => {
    const usage = (message: RegExp) => (error: unknown) => error instanceof UserError && error.exitCode === 2 && message.test(error.message);
    assert.throws(() => argv('--trace-speedup', '2'), usage(/^--trace-speedup shapes the replay of --trace$/));
    assert.throws(() => argv('--trace-format', 'azure', '--trace-window', '0,1s'), usage(/--trace-format, --trace-window shape the replay/));
    assert.throws(() => argv('--trace-start', '1s'), usage(/--trace-start shapes the replay/));
    for (const shape of [
      ['--sessions', '2', '--turns', '2'],
      ['--turns', '2'],
      ['--shared-prefixes', '2'],
    ])
      assert.throws(() => argv('--trace', MOONCAKE, ...shape), usage(/--trace and --turns \/ --shared-prefixes are alternatives/));
    for (const workload of [
      ['--concurrency', '2'],
      ['--rate', '2'],
      ['--single-stream', '2'],
      ['--capacity', 'rate:1..4', '--capacity-slo', 'ttft-p99=1s'],
    ])
      assert.throws(
        () => argv('--trace', MOONCAKE, '--trace-speedup', '2', ...workload),
        usage(new RegExp(`--trace-speedup scales .* which ${workload[0]} replaces`)),
      );
    // A zero-length window reads as one (not "expected one of 0"); a bad duration names its flag.
    assert.throws(() => argv('--trace', MOONCAKE, '--trace-window', '0,0s'), usage(/^--trace-window: END must be after START, got "0,0s"$/));
    assert.throws(() => argv('--trace', MOONCAKE, '--trace-duration', 'soon'), usage(/^--trace-duration: invalid duration "soon"/));
  });

  test('a trace workload needs trace prompts', async () => {
    await assert.rejects(
      runBenchmark({
        ...argv('--single-stream', '1'),
        workload: { kind: 'trace', maxInFlight: 4 },
        baseUrl: 'http://127.0.0.1:9',
      }),
      /a trace workload replays a trace, but the prompts are not one/,
    );
    await assert.rejects(
      runBenchmark({ ...argv('--trace', MOONCAKE, '--requests', '99'), baseUrl: 'http://127.0.0.1:9' }),
      /holds 24 requests, fewer than the 99 asked for/,
    );
    // Under another workload the trace is not cycled either: a repeat would find its whole prompt cached.
    await assert.rejects(
      runBenchmark({ ...argv('--trace', MOONCAKE, '--concurrency', '2', '--requests', '30'), baseUrl: 'http://127.0.0.1:9' }),
      (error: unknown) => error instanceof UserError && error.exitCode === 2 && /holds 24 requests, fewer than the 30 measured/.test(error.message),
    );
    // A window past the trace's end is a wrong setting, exit 2 as too many requests is; a missing file names --trace.
    await assert.rejects(
      runBenchmark({ ...argv('--trace', MOONCAKE, '--trace-window', '1h,2h'), baseUrl: 'http://127.0.0.1:9' }),
      (error: unknown) => error instanceof UserError && error.exitCode === 2 && /holds no requests in the window asked for/.test(error.message),
    );
    await assert.rejects(
      runBenchmark({ ...argv('--trace', join(SAMPLES, 'missing.jsonl')), baseUrl: 'http://127.0.0.1:9' }),
      (error: unknown) => error instanceof UserError && /^cannot read trace .*missing\.jsonl/.test(error.message) && /--trace path/.test(error.hint),
    );
  });

  test('experiment file: client.prompts kind trace (path from the file, window in durations), workload kind trace', (t) => {
    const dir = tempDir(t, 'trace-exp');
    // The window [1 s, 3 s) holds the second request: the file is checked as it loads (an empty window is refused).
    writeFileSync(
      join(dir, 'm.jsonl'),
      '{"timestamp": 0, "input_length": 10, "output_length": 2}\n{"timestamp": 1500, "input_length": 10, "output_length": 2}\n',
    );
    const path = writeExperiment(dir, 'exp.yaml', {
      client: { prompts: { kind: 'trace', path: 'm.jsonl', format: 'mooncake', speedup: 2, window: { start: '1s', end: 3 } } },
      workloads: [{ kind: 'trace', requests: 1 }],
    });
    const experiment = loadExperiment(path);
    const [variant] = experiment.variants;
    assert.deepEqual(variant!.client.prompts, {
      kind: 'trace',
      path: join(dir, 'm.jsonl'),
      format: 'mooncake',
      speedup: 2,
      window: { startMs: 1000, endMs: 3000 },
      seed: 0,
    });
    assert.deepEqual(
      experiment.workloads.map((workload) => [workload.label, workload.workload]),
      [['trace', { kind: 'trace', requests: 1, maxInFlight: 256 }]],
    );
    const bad = writeExperiment(dir, 'bad.yaml', { client: { prompts: { kind: 'trace', path: 'm.jsonl', format: 'sharegpt' } } });
    assert.throws(() => loadExperiment(bad), /client\.prompts/);
  });
});
