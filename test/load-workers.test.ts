import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { interArrivalMs } from '../src/load/random.js';
import { runBenchmark } from '../src/load/run.js';
import type { BenchOptions, BenchResult, LevelResult } from '../src/load/types.js';
import { LoadWorkers, partitionLevel, resolveWorkerCount, splitEvenly } from '../src/load/workers/pool.js';
import { mulberry32 } from '../src/util/random.js';
import { servingSimulator } from './support-experiment.js';

/** A simulator whose timing depends on nothing but the request: single-thread and worker runs must agree. */
const DETERMINISTIC = ['--ttft-ms', '8', '--prefill-ms-per-token', '0', '--tpot-ms', '4', '--jitter', '0', '--concurrency-slowdown', '0'];

function options(url: string, overrides: Partial<BenchOptions>): BenchOptions {
  return {
    baseUrl: url,
    backend: 'openai-completions',
    workload: { kind: 'concurrency', concurrency: 8, requests: 48 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'uniform', min: 4, max: 40 }, outputTokens: { kind: 'uniform', min: 4, max: 24 }, seed: 7 },
    // One warm-up request per worker at least (runBenchmark raises it to that): the same prompts either way.
    warmupRequests: 4,
    ignoreEos: true,
    requestTimeoutMs: 10_000,
    specMetrics: 'none',
    ...overrides,
  };
}

const level = (result: BenchResult): LevelResult => result.levels[0]!;

describe('load workers: partition', () => {
  test('every request goes to exactly one worker; streams and in-flight caps add up', () => {
    const prompts = Array.from({ length: 23 }, (_, index) => ({ prompt: `p${index}`, inputTokens: 1, maxTokens: 1 }));
    const shares = partitionLevel({ label: 'c=10', requests: 23, concurrency: 10 }, prompts, 1, 4);
    assert.deepEqual(
      shares.map((share) => share.concurrency),
      [3, 3, 2, 2],
    );
    assert.deepEqual(
      shares.flatMap((share) => share.items.map((entry) => entry.index)).sort((a, b) => a - b),
      prompts.map((_, index) => index),
    );
    // Fewer streams than workers: idle workers get nothing.
    const few = partitionLevel({ label: 'c=2', requests: 23, concurrency: 2 }, prompts, 1, 4);
    assert.deepEqual(
      few.map((share) => share.items.length),
      [12, 11, 0, 0],
    );
    assert.deepEqual(splitEvenly(7, 3), [3, 2, 2]);
    assert.equal(resolveWorkerCount(16, 4), 4);
    assert.ok(resolveWorkerCount('auto', 1000) >= 1);
  });

  test('an open loop keeps the single-thread arrival schedule', () => {
    const prompts = Array.from({ length: 30 }, (_, index) => ({ prompt: `p${index}`, inputTokens: 1, maxTokens: 1 }));
    const shares = partitionLevel({ label: 'rate', requests: 30, rate: { requestsPerSecond: 50, arrival: 'poisson', maxInFlight: 9 } }, prompts, 42, 3);
    const random = mulberry32(42);
    let at = 0;
    const expected = prompts.map((_, index) => (index === 0 ? 0 : (at += interArrivalMs({ requestsPerSecond: 50, arrival: 'poisson' }, random))));
    const merged = shares.flatMap((share) => share.items).sort((a, b) => a.index - b.index);
    assert.deepEqual(
      merged.map((entry) => entry.dueAtMs),
      expected,
    );
    assert.deepEqual(
      shares.map((share) => share.concurrency),
      [3, 3, 3],
    );
  });
});

describe('load workers on a real simulator', () => {
  test('4 workers: every request counted once, same tokens as one thread, timings never under the model', async (t) => {
    const url = await servingSimulator(t, DETERMINISTIC);
    const single = level(await runBenchmark(options(url, {})));
    const multi = level(await runBenchmark(options(url, { workers: 4 })));
    assert.deepEqual(
      multi.samples.map((sample) => sample.index),
      single.samples.map((_, index) => index),
    );
    assert.equal(multi.completed, 48);
    assert.equal(multi.failed, 0);
    // Integral figures are identical request by request.
    assert.deepEqual(
      multi.samples.map((sample) => [sample.inputTokens, sample.outputTokens, sample.itlMs.length]),
      single.samples.map((sample) => [sample.inputTokens, sample.outputTokens, sample.itlMs.length]),
    );
    assert.equal(multi.itlMs.count, single.itlMs.count);
    // Timed figures: the deterministic simulator sends the first token 8 ms after the request and token i 4·i ms
    // after that (deadlines, so a token late under load is followed by ones that catch up: TPOT has no floor), so
    // no thread may time a TTFT or E2E under that (a timer taken at the wrong place would). How close each comes from above
    // depends on how busy the machine is: that distortion is a figure of bench/client-overhead (--workers N against
    // the simulator's own send timestamps), not a test assertion that a loaded CI box would fail at random.
    const fixed = { prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 16 }, outputTokens: { kind: 'fixed', value: 16 }, seed: 1 } } as const;
    const oneThread = level(await runBenchmark(options(url, fixed)));
    const workers = level(await runBenchmark(options(url, { ...fixed, workers: 4 })));
    const floors = { ttftMs: 8, e2eMs: 8 + 15 * 4 } as const;
    for (const [metric, floor] of Object.entries(floors) as Array<[keyof typeof floors, number]>) {
      // 1 ms of slack: the simulator's timers and ours round differently.
      for (const [who, figures] of [
        ['one thread', oneThread],
        ['4 workers', workers],
      ] as const) {
        assert.ok(figures[metric].min >= floor - 1, `${metric} of ${who}: min ${figures[metric].min.toFixed(2)} ms under the model's ${floor} ms`);
      }
    }
    assert.equal(workers.itlMs.count, oneThread.itlMs.count);
  });

  test('ground truth inside workers: each outcome carries its timing errors against the simulator (bench/ hook)', async (t) => {
    const url = await servingSimulator(t, DETERMINISTIC);
    const workers = await LoadWorkers.start(
      2,
      { origin: url, pathPrefix: '', backend: 'openai-completions', backendOptions: { ignoreEos: true }, requestTimeoutMs: 10_000, groundTruth: true },
      4,
    );
    t.after(() => workers.close());
    const prompts = Array.from({ length: 8 }, (_, index) => ({ prompt: `p${index}`, inputTokens: 4, maxTokens: 6 }));
    const run = await workers.runLevel({ label: 'c=4', requests: 8, concurrency: 4 }, prompts, 1);
    assert.equal(run.outcomes.length, 8);
    for (const outcome of run.outcomes) {
      const truth = outcome.groundTruth!;
      // Same monotonic clock in simulator and worker: a delivery delay of well under a second, never negative
      // beyond clock-offset noise; one ITL error per token event after the first.
      assert.ok(truth.ttftMs > -1 && truth.ttftMs < 1000, `ttft error ${truth.ttftMs}`);
      assert.equal(truth.itlMs.length, outcome.sample.itlMs.length);
      assert.ok(truth.itlMs.every((error) => error >= 0 && error < 1000));
    }
  });

  test('open loop across workers, progress and abort: each request reported once', async (t) => {
    const url = await servingSimulator(t, DETERMINISTIC);
    const rate = level(
      await runBenchmark(
        options(url, { workers: 3, warmupRequests: 0, workload: { kind: 'rate', requestsPerSecond: 200, arrival: 'poisson', maxInFlight: 12, requests: 40 } }),
      ),
    );
    assert.deepEqual(
      rate.samples.map((sample) => sample.index),
      Array.from({ length: 40 }, (_, index) => index),
    );
    assert.equal(rate.completed, 40);

    const controller = new AbortController();
    const seen: number[] = [];
    const result = await runBenchmark(
      options(url, {
        workers: 2,
        warmupRequests: 0,
        signal: controller.signal,
        workload: { kind: 'concurrency', concurrency: 4, requests: 400 },
        onProgress: (progress) => {
          seen.push(progress.completed);
          if (progress.completed >= 8) controller.abort();
        },
      }),
    );
    assert.equal(result.interrupted, true);
    const samples = level(result).samples;
    assert.equal(new Set(samples.map((sample) => sample.index)).size, samples.length);
    assert.ok(samples.length < 400);
    assert.ok(seen.length > 0);
  });
});
