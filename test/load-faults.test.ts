/**
 * The load client against a server that misbehaves on purpose (support-fault-server.ts): no silently wrong number.
 * Each fault must show in the level's result, and levelValidity must call the level invalid.
 */

import assert from 'node:assert/strict';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { levelValidity } from '../src/experiment/analysis/trial-validity.js';
import { runBenchmark } from '../src/load/run.js';
import type { BenchOptions, LevelResult } from '../src/load/types.js';
import { formatBenchTable } from '../src/metrics/table.js';
import { type Faults, startFaultServer } from './support-fault-server.js';

const OUTPUT = 40;

async function bench(t: TestContext, faults: Faults, overrides: Partial<BenchOptions> = {}): Promise<{ level: LevelResult; table: string }> {
  const server = await startFaultServer(t, faults);
  const result = await runBenchmark({
    baseUrl: server.url,
    backend: 'openai-completions',
    workload: { kind: 'concurrency', concurrency: 4, requests: 16 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 8 }, outputTokens: { kind: 'fixed', value: OUTPUT }, seed: 1 },
    warmupRequests: 0,
    ignoreEos: true,
    requestTimeoutMs: 10_000,
    specMetrics: 'none',
    ...overrides,
  });
  return { level: result.levels[0]!, table: formatBenchTable(result) };
}

const strict = { ignoreEos: true, maxFailedFraction: 0 };
/** A BPE tokenizer with " the" as one token: the fault server's text counted as it counts it. */
const WORD_TOKENIZER = fileURLToPath(new URL('../../test/fixtures/tokenizers/bpe/tokenizer.json', import.meta.url));

describe('load client against a faulty server', () => {
  test('an honest server: a valid level with no notes', async (t) => {
    const { level, table } = await bench(t, {});
    assert.equal(levelValidity(level, strict), undefined);
    assert.deepEqual(level.outputLength, { requestedMean: OUTPUT, generatedMean: OUTPUT, shortRequests: 0 });
    assert.equal(level.tokenCounts?.disagreeing, 0);
    assert.doesNotMatch(table, /early-stop|disagree|resends|WARNING/);
  });

  test('stopping at 40% of the requested tokens despite ignore_eos: early-stop recorded and invalid', async (t) => {
    const { level, table } = await bench(t, { outputShare: 0.4 });
    assert.deepEqual(level.outputLength, { requestedMean: OUTPUT, generatedMean: 16, shortRequests: 16 });
    assert.match(table, /early-stop: 16\.0 of 40\.0 tokens per request \(16 requests stopped short\) at c=4/);
    assert.match(levelValidity(level, strict) ?? '', /^early-stop: 16\.0 of 40\.0 .*ignore_eos was asked/);
    assert.equal(levelValidity(level, { ...strict, requireFullOutput: false }), undefined, 'accepted when asked');
    assert.equal(levelValidity(level, { ...strict, ignoreEos: false }), undefined, 'expected without ignore_eos');
  });

  test('each word streamed as two token events, usage agreeing: over-length, invalid with or without ignore_eos', async (t) => {
    const { level, table } = await bench(t, { eventsPerWord: 2 });
    assert.deepEqual(level.outputLength, { requestedMean: OUTPUT, generatedMean: 2 * OUTPUT, shortRequests: 0, overLengthRequests: 16 });
    assert.equal(level.tokenCounts?.disagreeing, 0, 'usage and the events agree: the count is not the question');
    const reason = /^over-length: 80\.0 of 40\.0 tokens per request \(16 requests over their max_tokens, counted by server-usage\)/;
    assert.match(levelValidity(level, strict) ?? '', reason);
    assert.match(levelValidity(level, { ...strict, ignoreEos: false, requireFullOutput: false }) ?? '', reason);
    assert.match(table, /over-length: 80\.0 of 40\.0 tokens per request .* at c=4/);
  });

  test('a server that ignores max_tokens (twice the words, one per event): over-length', async (t) => {
    const { level } = await bench(t, { outputShare: 2 });
    assert.match(levelValidity(level, strict) ?? '', /^over-length: 80\.0 of 40\.0 tokens per request \(16 requests/);
  });

  test('zero generated tokens is never a success', async (t) => {
    const { level } = await bench(t, { outputShare: 0 }, { maxFailedFraction: 1 });
    assert.deepEqual([level.completed, level.failed, level.errorsByKind], [0, 16, { 'no-output': 16 }]);
    assert.match(level.samples[0]!.error!.message, /no output tokens \(asked for 40/);
    assert.match(levelValidity(level, strict) ?? '', /no output tokens for 16 of 16 requests/);
  });

  test('usage twice the streamed tokens: both numbers recorded, invalid until a source is trusted', async (t) => {
    const lying = await bench(t, { usageFactor: 2, tpotMs: 5 });
    const counts = lying.level.tokenCounts!;
    assert.deepEqual(
      [counts.method, counts.trusted, counts.checked, counts.disagreeing, counts.usage, counts.stream],
      ['server-usage', false, 16, 16, 1280, 640],
    );
    assert.match(levelValidity(lying.level, strict) ?? '', /server usage 1,280 output tokens, the stream 640 token events \(16 of 16 requests\)/);
    assert.match(lying.table, /token counts disagree: .* at c=4; figures use server-usage/);
    const trusted = await bench(t, { usageFactor: 2, tpotMs: 5 }, { tokenCounts: 'stream' });
    assert.equal(levelValidity(trusted.level, strict), undefined);
    assert.deepEqual([trusted.level.tokenCounts!.method, trusted.level.tokenCounts!.trusted], ['stream-chunks', true]);
    assert.equal(trusted.level.samples[0]!.outputTokens, OUTPUT);
    t.diagnostic(
      `usage 2x: ${lying.level.outputTokensPerSecond.toFixed(0)} tok/s, TPOT p50 ${lying.level.tpotMs.median.toFixed(2)} ms; trusted stream: ${trusted.level.outputTokensPerSecond.toFixed(0)} tok/s, TPOT p50 ${trusted.level.tpotMs.median.toFixed(2)} ms`,
    );
  });

  test('usage half the streamed tokens (impossible) is flagged too', async (t) => {
    const { level } = await bench(t, { usageFactor: 0.5 });
    assert.deepEqual([level.tokenCounts!.disagreeing, level.tokenCounts!.usage, level.tokenCounts!.stream], [16, 320, 640]);
    assert.match(levelValidity(level, strict) ?? '', /token counts disagree/);
  });

  test('three tokens per event with honest usage: counted by usage and noted, not a disagreement; ITL per event', async (t) => {
    const { level, table } = await bench(t, { wordsPerEvent: 3, tpotMs: 2 });
    assert.equal(levelValidity(level, strict), undefined);
    const counts = level.tokenCounts!;
    assert.deepEqual([counts.method, counts.disagreeing, counts.severalPerEvent], ['server-usage', 0, { requests: 16, tokens: 640, events: 224 }]);
    assert.ok(level.samples.every((sample) => sample.outputTokens === OUTPUT && sample.itlMs.length === 13));
    assert.match(
      table,
      /token events carried several tokens in 16 of 16 requests \(640 tokens in 224 events, 2\.86 per event\): figures count server-usage; ITL is the gap between events, TPOT per token at c=4/,
    );
    assert.ok(level.tpotMs.median < level.itlMs.median, `TPOT ${level.tpotMs.median} ms per token, ITL ${level.itlMs.median} ms per event`);
  });

  test('three tokens per event, usage twice them: caught by a tokenizer; usage below the words caught without one', async (t) => {
    const high = await bench(t, { wordsPerEvent: 3, usageFactor: 2 }, { tokenizerPath: WORD_TOKENIZER });
    assert.deepEqual([high.level.tokenCounts!.disagreeing, high.level.tokenCounts!.tokenizer], [16, 640]);
    assert.match(
      levelValidity(high.level, strict) ?? '',
      /^token counts disagree: server usage 1,280 output tokens, the stream 224 token events, the tokenizer 640 \(16 of 16 requests\); their text has 640 words: .*client\.tokenizer/,
    );
    const agreeing = await bench(t, { wordsPerEvent: 3 }, { tokenizerPath: WORD_TOKENIZER });
    assert.equal(levelValidity(agreeing.level, strict), undefined, 'the tokenizer vouches for usage');
    assert.equal(agreeing.level.tokenCounts!.severalPerEvent?.requests, 16);
    const low = await bench(t, { wordsPerEvent: 3, usageFactor: 0.5 }, { ignoreEos: false });
    assert.match(
      levelValidity(low.level, strict) ?? '',
      /server usage 320 output tokens, the stream 224 token events \(16 of 16 requests\); their text has 640 words/,
    );
  });

  test('a server resetting 1 in 16 connections after reading the request: every reset is a failure or a counted resend', async (t) => {
    const server = await startFaultServer(t, { resetEvery: 16 });
    const result = await runBenchmark({
      baseUrl: server.url,
      backend: 'openai-completions',
      workload: { kind: 'concurrency', concurrency: 4, requests: 64 },
      prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 8 }, outputTokens: { kind: 'fixed', value: 4 }, seed: 1 },
      warmupRequests: 0,
      ignoreEos: true,
      requestTimeoutMs: 10_000,
      specMetrics: 'none',
      maxFailedFraction: 1,
    });
    const level = result.levels[0]!;
    const resends = level.resends ?? 0;
    assert.equal(resends + level.failed, server.resets(), `resets ${server.resets()}, resends ${resends}, failed ${level.failed}`);
    assert.ok(server.resets() >= 4);
    assert.match(levelValidity(level, strict) ?? '', /(requests failed|sent again after their connection closed)/);
    assert.equal(levelValidity(level, { ...strict, maxFailedFraction: 0.2 }), undefined, 'within a generous allowance');
    t.diagnostic(`64 requests, ${server.resets()} resets: ${level.completed} ok, ${level.failed} failed, ${resends} resent`);
  });

  test('a hung engine (first token after 3 s, timeout 300 ms): the level stops at the first timeout, naming the setting', async (t) => {
    const started = performance.now();
    const { level } = await bench(
      t,
      { ttftMs: 3000 },
      {
        requestTimeoutMs: 300,
        requestTimeoutSetting: 'client.requestTimeout',
        maxFailedFraction: 0,
        workload: { kind: 'concurrency', concurrency: 2, requests: 20 },
      },
    );
    const elapsed = performance.now() - started;
    assert.match(level.stopped ?? '', /^stopped after 1 of 20 requests failed/);
    assert.ok(level.failed + (level.errorsByKind.aborted ?? 0) <= 2, JSON.stringify(level.errorsByKind));
    assert.match(
      level.samples.find((sample) => sample.error?.kind === 'timeout')!.error!.message,
      /no response data for 300ms \(client\.requestTimeout\): raise client\.requestTimeout/,
    );
    assert.ok(elapsed < 2500, `stopped after ${elapsed.toFixed(0)} ms rather than 10 × 300 ms of timeouts`);
    assert.equal(levelValidity(level, strict), level.stopped);
  });

  test('rate mode behind an in-flight cap: latency from the scheduled arrival, queueing shown and warned', async (t) => {
    const { level, table } = await bench(
      t,
      { ttftMs: 20, tpotMs: 10 },
      {
        workload: { kind: 'rate', requestsPerSecond: 40, arrival: 'constant', maxInFlight: 2, requests: 16 },
        prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 8 }, outputTokens: { kind: 'fixed', value: 10 }, seed: 1 },
      },
    );
    const rate = level.rate!;
    assert.ok(rate.queuedByCap >= 10, `queued ${rate.queuedByCap}`);
    assert.ok(
      level.ttftMs.median > 3 * level.ttftFromSendMs!.median,
      `TTFT p50 from schedule ${level.ttftMs.median} vs from send ${level.ttftFromSendMs!.median}`,
    );
    assert.ok(level.e2eMs.median > level.e2eFromSendMs!.median);
    assert.ok(rate.sentPerSecond < 0.5 * rate.scheduledPerSecond, JSON.stringify(rate));
    assert.match(table, /rate rate=40\/s: offered 40\.0 req\/s .*sent .*served .*TTFT p50 .* ms from arrival, .* ms from send/);
    assert.match(table, /WARNING rate=40\/s: the client fell behind its schedule .*requests waited for the in-flight cap/);
    assert.match(table, /WARNING rate=40\/s: the server completed .* req\/s of the .* scheduled/);
    t.diagnostic(
      `rate 40/s, cap 2: TTFT p50 ${level.ttftMs.median.toFixed(0)} ms from schedule vs ${level.ttftFromSendMs!.median.toFixed(0)} ms from send; sent ${rate.sentPerSecond.toFixed(1)}/s, served ${rate.servedPerSecond.toFixed(1)}/s`,
    );
  });
});
