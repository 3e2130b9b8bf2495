import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { newStreamState } from '../src/load/backends.js';
import { specCountersFromMetrics, specFromCounterDelta, specFromResponses, withVerifyStepTime } from '../src/load/spec.js';
import type { BenchResult, RequestSample } from '../src/load/types.js';
import { parsePrometheusByLabel, parsePrometheusTotals } from '../src/metrics/prometheus.js';
import { meetsSlo, summarize, summarizeLevel } from '../src/metrics/summary.js';
import { formatBenchTable, formatProgress } from '../src/metrics/table.js';

function sample(index: number, fields: Partial<RequestSample>): RequestSample {
  return { index, sentAtMs: 0, inputTokens: 10, outputTokens: 5, itlMs: [], ...fields };
}

describe('summarize', () => {
  test('linear-interpolation quantiles (numpy default)', () => {
    const values = Array.from({ length: 101 }, (_, i) => 100 - i);
    const summary = summarize(values);
    assert.deepEqual(
      [summary.median, summary.p90, summary.p95, summary.p99, summary.min, summary.max, summary.mean, summary.count],
      [50, 90, 95, 99, 0, 100, 50, 101],
    );
    assert.equal(summarize([1, 2]).p90, 1.9);
  });

  test('empty input gives count 0', () => {
    assert.deepEqual(summarize([]), { mean: 0, median: 0, p90: 0, p95: 0, p99: 0, min: 0, max: 0, count: 0 });
  });
});

describe('summarizeLevel', () => {
  const samples = [
    sample(0, { ttftMs: 10, tpotMs: 2, e2eMs: 18, itlMs: [2, 2, 2, 2], outputTokens: 5 }),
    sample(1, { ttftMs: 30, tpotMs: 4, e2eMs: 46, itlMs: [4, 4, 4, 4], outputTokens: 5 }),
    sample(2, { error: { kind: 'http-5xx', message: 'HTTP 500' } }),
    sample(3, { error: { kind: 'timeout', message: 'stall' }, ttftMs: 5 }),
    sample(4, { error: { kind: 'aborted', message: 'ctrl-c' } }),
  ];
  const level = summarizeLevel({ label: 'c=2', concurrency: 2, durationS: 2, samples, slo: { ttftMs: 20 } });

  test('latencies from completed requests only, ITL pooled', () => {
    assert.deepEqual([level.completed, level.failed], [2, 2]);
    assert.deepEqual(level.errorsByKind, { 'http-5xx': 1, timeout: 1, aborted: 1 });
    assert.equal(level.ttftMs.mean, 20);
    assert.equal(level.itlMs.count, 8);
    assert.equal(level.itlMs.mean, 3);
    assert.equal(level.e2eMs.max, 46);
  });

  test('throughputs over the level wall time', () => {
    assert.equal(level.outputTokensPerSecond, 5);
    assert.equal(level.totalTokensPerSecond, 15);
    assert.equal(level.requestsPerSecond, 1);
    assert.equal(level.outputTokensPerSecondPerStream.max, 5 / 0.018);
  });

  test('goodput: share of attempted (non-aborted) requests meeting every SLO', () => {
    assert.deepEqual(level.goodput, { fraction: 0.25, requestsPerSecond: 0.5 });
    assert.equal(meetsSlo(samples[0]!, { ttftMs: 20, tpotMs: 1 }), false);
    assert.equal(meetsSlo(samples[0]!, { e2eMs: 18 }), true);
    assert.equal(meetsSlo(samples[2]!, {}), false);
    assert.equal(summarizeLevel({ label: 'x', durationS: 1, samples }).goodput, undefined);
  });
});

describe('speculative decoding stats', () => {
  test('Prometheus totals sum every series', () => {
    const totals = parsePrometheusTotals(
      '# HELP x\n# TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total{engine="0"} 10.0\n' +
        'vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="a b}"} 5\nplain 3 1700000000\n',
    );
    assert.equal(totals.get('vllm:spec_decode_num_draft_tokens_total'), 15);
    assert.equal(totals.get('plain'), 3);
  });

  test('counter delta: acceptance rate and mean accepted length (1 + accepted/drafts)', () => {
    const stats = specFromCounterDelta(
      { engine: 'vllm', drafts: 10, draftTokens: 40, acceptedTokens: 20 },
      { engine: 'vllm', drafts: 30, draftTokens: 120, acceptedTokens: 80 },
      'test',
    );
    assert.deepEqual(stats, { source: 'test', acceptanceRate: 0.75, draftTokens: 80, acceptedTokens: 60, meanAcceptedLength: 4, verifySteps: 20 });
    assert.equal(
      specFromCounterDelta(
        { engine: 'vllm', drafts: 1, draftTokens: 4, acceptedTokens: 1 },
        { engine: 'vllm', drafts: 1, draftTokens: 4, acceptedTokens: 1 },
        'x',
      ),
      undefined,
    );
  });

  test('verify-step time: decode time (e2e - TTFT) of the completed requests over the verify steps', () => {
    const sample = (ttftMs: number, e2eMs: number, failed = false): RequestSample => ({
      index: 0,
      sentAtMs: 0,
      inputTokens: 8,
      outputTokens: 10,
      ttftMs,
      e2eMs,
      itlMs: [],
      ...(failed && { error: { kind: 'timeout' as const, message: 'x' } }),
    });
    const samples = [sample(20, 220), sample(30, 330), sample(10, 5000, true)];
    assert.equal(withVerifyStepTime({ source: 'x', verifySteps: 25 }, samples).verifyStepMs, 20);
    // No verify steps counted (llama.cpp's timings): nothing to divide by.
    assert.equal(withVerifyStepTime({ source: 'x', acceptanceRate: 0.5 }, samples).verifyStepMs, undefined);
  });

  test('per-position counter: series summed per label value, the delta divided by drafts', () => {
    const text =
      'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 8\n' +
      'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",position="0"} 2\n' +
      'vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="a,position=\\"9\\"",position="1"} 4\n' +
      'vllm:spec_decode_num_accepted_tokens_total{position="0"} 99\n';
    assert.deepEqual(
      [...parsePrometheusByLabel(text, 'vllm:spec_decode_num_accepted_tokens_per_pos_total', 'position')],
      [
        ['0', 10],
        ['1', 4],
      ],
    );
    const stats = specFromCounterDelta(
      { engine: 'vllm', drafts: 10, draftTokens: 20, acceptedTokens: 10, acceptedPerPosition: [6, 4] },
      { engine: 'vllm', drafts: 20, draftTokens: 40, acceptedTokens: 22, acceptedPerPosition: [14, 8] },
      'test',
    );
    assert.deepEqual(stats?.acceptanceByPosition, [0.8, 0.4]);
  });

  test("llama-server counters under llamacpp: (no _total suffix) are read like vLLM's", () => {
    const text =
      '# TYPE llamacpp:spec_decode_num_draft_tokens counter\nllamacpp:spec_decode_num_draft_tokens 40\nllamacpp:spec_decode_num_accepted_tokens 30\n' +
      'llamacpp:spec_decode_num_drafts 10\nllamacpp:spec_decode_num_accepted_tokens_per_pos{position="1"} 12\nllamacpp:spec_decode_num_accepted_tokens_per_pos{position="0"} 18\n' +
      'llamacpp:prompt_tokens_total 100\n';
    assert.deepEqual(specCountersFromMetrics(text), { engine: 'llamacpp', drafts: 10, draftTokens: 40, acceptedTokens: 30, acceptedPerPosition: [18, 12] });
    assert.equal(specCountersFromMetrics('llamacpp:prompt_tokens_total 100\n'), undefined);
    // A gap in the positions is not a per-position figure.
    assert.equal(
      specCountersFromMetrics(
        'vllm:spec_decode_num_draft_tokens_total 4\nvllm:spec_decode_num_accepted_tokens_total 2\nvllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 2\n',
      )?.acceptedPerPosition,
      undefined,
    );
  });

  test('per-response counters: llama.cpp draft counts, SGLang verify steps', () => {
    const llama = [newStreamState(false), newStreamState(false)];
    Object.assign(llama[0]!, { specDraftTokens: 10, specAcceptedTokens: 6 });
    Object.assign(llama[1]!, { specDraftTokens: 10, specAcceptedTokens: 8 });
    assert.equal(specFromResponses(llama)?.acceptanceRate, 0.7);
    assert.equal(specFromResponses(llama)?.verifySteps, undefined, 'no completion tokens: no steps');
    // 21 tokens: 1 from the prompt's pass, 6 (and 8) accepted drafts, so 14 (and 12) target steps.
    for (const state of llama) state.completionTokens = 21;
    assert.deepEqual([specFromResponses(llama)?.verifySteps, specFromResponses(llama)?.meanAcceptedLength], [26, 40 / 26]);
    const sglang = newStreamState(false);
    Object.assign(sglang, { completionTokens: 31, specVerifySteps: 10 });
    assert.equal(specFromResponses([sglang])?.meanAcceptedLength, 3);
    assert.equal(specFromResponses([newStreamState(false)]), undefined);
  });
});

describe('table', () => {
  test('one row per level, errors, spec and interruption noted', () => {
    const level = summarizeLevel({
      label: 'c=4',
      concurrency: 4,
      durationS: 1,
      samples: [
        sample(0, { ttftMs: 12.5, tpotMs: 3, e2eMs: 24.5, itlMs: [3, 3, 3, 3] }),
        sample(1, { error: { kind: 'http-5xx', message: 'HTTP 500: boom' } }),
      ],
      spec: { source: 'sim', acceptanceRate: 0.7, meanAcceptedLength: 2.5, verifySteps: 40, verifyStepMs: 23.4 },
    });
    const result: BenchResult = {
      schemaVersion: 1,
      startedAt: '',
      baseUrl: 'http://x',
      backend: 'openai-chat',
      tokenCountMethod: 'stream-chunks',
      interrupted: true,
      levels: [level],
    };
    const table = formatBenchTable(result);
    const lines = table.trimEnd().split('\n');
    assert.match(lines[1]!, /^level\s+ok\s+fail/);
    assert.match(lines[2]!, /^c=4\s+1\s+1\s+1\.00\s+5\.0\s/);
    assert.match(lines[2]!, /12\.5\/12\.5/);
    assert.match(lines[2]!, /70%\/2\.50\/23\.4$/);
    assert.match(table, /errors c=4: http-5xx 1 \(first: HTTP 500: boom\)/);
    assert.match(table, /counted stream events/);
    assert.match(table, /INTERRUPTED/);
  });

  test('progress line', () => {
    assert.match(
      formatProgress({ levelLabel: 'c=1', completed: 5, total: 10, failed: 1, outputTokensPerSecond: 123.4, elapsedMs: 2500 }),
      /^c=1\s+\[#+\.+\] 6\/10 {2}1 failed {2}123 tok\/s {2}2\.5s$/,
    );
  });
});
