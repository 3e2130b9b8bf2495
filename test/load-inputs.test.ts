import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseBenchArgv } from '../src/cli/commands/bench.js';
import { workloadFromFlags } from '../src/cli/commands/bench-options.js';
import { parseDurationMs } from '../src/config/duration.js';
import { lengthSpecSchema, parseLengthSpec, promptSourceSchema, workloadSchema } from '../src/load/config.js';
import { planLevels, workloadLabels } from '../src/load/level.js';
import { loadPrompts } from '../src/load/prompts.js';
import { interArrivalMs, sampleLength } from '../src/load/random.js';
import { DEFAULT_MAX_IN_FLIGHT } from '../src/util/defaults.js';
import { UserError } from '../src/util/errors.js';
import { mulberry32 } from '../src/util/random.js';

const fixture = (name: string) => fileURLToPath(new URL(`../../test/fixtures/load/${name}`, import.meta.url));

describe('length and duration specs', () => {
  test('parses the CLI shorthands', () => {
    assert.deepEqual(parseLengthSpec('512'), { kind: 'fixed', value: 512 });
    assert.deepEqual(parseLengthSpec('normal:512,64'), { kind: 'normal', mean: 512, stddev: 64 });
    assert.deepEqual(parseLengthSpec('normal:512,64,100,900'), { kind: 'normal', mean: 512, stddev: 64, min: 100, max: 900 });
    assert.deepEqual(parseLengthSpec('uniform:10,20'), { kind: 'uniform', min: 10, max: 20 });
    for (const bad of ['0', 'x', 'uniform:20,10', 'normal:5', 'poisson:3', '1.5']) assert.throws(() => parseLengthSpec(bad), /invalid length/);
  });

  test('zod length schema accepts numbers, strings and objects', () => {
    assert.deepEqual(lengthSpecSchema.parse(128), { kind: 'fixed', value: 128 });
    assert.deepEqual(lengthSpecSchema.parse('uniform:1,3'), { kind: 'uniform', min: 1, max: 3 });
    assert.deepEqual(lengthSpecSchema.parse({ kind: 'fixed', value: 3 }), { kind: 'fixed', value: 3 });
    assert.equal(lengthSpecSchema.safeParse('bogus').success, false);
  });

  test('workload and prompt schemas fill defaults and reject unknown keys', () => {
    assert.deepEqual(workloadSchema.parse({ kind: 'rate', requestsPerSecond: 2, maxInFlight: 8, requests: 10 }), {
      kind: 'rate',
      requestsPerSecond: 2,
      arrival: 'poisson',
      maxInFlight: 8,
      requests: 10,
    });
    assert.equal(workloadSchema.safeParse({ kind: 'sweep', concurrencies: [], requestsPerLevel: 4 }).success, false);
    assert.equal(workloadSchema.safeParse({ kind: 'single-stream', requests: 4, extra: 1 }).success, false);
    assert.deepEqual(promptSourceSchema.parse({ kind: 'synthetic', inputTokens: 128, outputTokens: 'normal:64,8' }), {
      kind: 'synthetic',
      inputTokens: { kind: 'fixed', value: 128 },
      outputTokens: { kind: 'normal', mean: 64, stddev: 8 },
      seed: 0,
    });
  });

  test('durations', () => {
    assert.equal(parseDurationMs('30s'), 30_000);
    assert.equal(parseDurationMs('250ms'), 250);
    assert.equal(parseDurationMs('2m'), 120_000);
    assert.equal(parseDurationMs('1.5'), 1500);
    assert.throws(() => parseDurationMs('soon'), UserError);
  });
});

describe('seeded randomness', () => {
  test('same seed, same sequence; lengths respect bounds', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    for (let i = 0; i < 5; i++) assert.equal(a(), b());
    const random = mulberry32(1);
    for (let i = 0; i < 1000; i++) {
      const value = sampleLength({ kind: 'uniform', min: 3, max: 5 }, random);
      assert.ok(value >= 3 && value <= 5 && Number.isInteger(value));
      const normal = sampleLength({ kind: 'normal', mean: 10, stddev: 50, min: 2, max: 20 }, random);
      assert.ok(normal >= 2 && normal <= 20);
    }
  });

  test('poisson gaps average 1/rate; constant gaps are exact', () => {
    const random = mulberry32(7);
    let total = 0;
    const n = 20_000;
    for (let i = 0; i < n; i++) total += interArrivalMs({ requestsPerSecond: 10, arrival: 'poisson' }, random);
    assert.ok(Math.abs(total / n - 100) < 3, `mean gap ${total / n}`);
    assert.equal(interArrivalMs({ requestsPerSecond: 4, arrival: 'constant' }, random), 250);
  });

  test('gamma gaps: mean 1/rate and coefficient of variation 1/sqrt(burstiness), for a fixed seed', () => {
    const n = 40_000;
    for (const burstiness of [0.1, 0.25, 1, 4, 16]) {
      const random = mulberry32(11);
      const gaps = Array.from({ length: n }, () => interArrivalMs({ requestsPerSecond: 8, arrival: 'gamma', burstiness }, random));
      assert.ok(gaps.every((gap) => gap >= 0 && Number.isFinite(gap)));
      const mean = gaps.reduce((sum, gap) => sum + gap, 0) / n;
      const cv = Math.sqrt(gaps.reduce((sum, gap) => sum + (gap - mean) ** 2, 0) / (n - 1)) / mean;
      // Standard errors at n = 40 000: the mean's is CV/sqrt(n) of 125 ms (under 2% at b = 0.1), the CV's a few %.
      assert.ok(Math.abs(mean / 125 - 1) < 0.05, `b=${burstiness}: mean gap ${mean} ms, expected 125`);
      assert.ok(Math.abs(cv * Math.sqrt(burstiness) - 1) < 0.06, `b=${burstiness}: CV ${cv}, expected ${1 / Math.sqrt(burstiness)}`);
    }
  });

  test('gamma workloads: burstiness required with gamma only; --burstiness alone means gamma', () => {
    const rate = { kind: 'rate' as const, requestsPerSecond: 4, maxInFlight: 8, requests: 10 };
    assert.deepEqual(workloadSchema.parse({ ...rate, arrival: 'gamma', burstiness: 0.5 }), { ...rate, arrival: 'gamma', burstiness: 0.5 });
    for (const bad of [{ arrival: 'gamma' }, { arrival: 'poisson', burstiness: 2 }, { arrival: 'gamma', burstiness: 0 }]) {
      assert.equal(workloadSchema.safeParse({ ...rate, ...bad }).success, false, JSON.stringify(bad));
    }
    const flags = { rate: '4', maxInFlight: '8', requests: '10' };
    assert.deepEqual(workloadFromFlags({ ...flags, burstiness: '0.5' }), { ...rate, arrival: 'gamma', burstiness: 0.5 });
    assert.deepEqual(workloadFromFlags(flags), { ...rate, arrival: 'poisson' });
    assert.throws(() => workloadFromFlags({ concurrency: '4', burstiness: '2' }), /shape the arrivals of --rate/);
    assert.deepEqual(workloadLabels({ ...rate, arrival: 'gamma', burstiness: 0.5 } as const), ['rate=4/s,burstiness=0.5']);
  });
});

describe('prompts', () => {
  test('synthetic prompts have the drawn number of words and are reproducible', async () => {
    const source = { kind: 'synthetic', inputTokens: { kind: 'uniform', min: 5, max: 50 }, outputTokens: { kind: 'fixed', value: 7 }, seed: 3 } as const;
    const prompts = await loadPrompts(source, 20);
    assert.equal(prompts.length, 20);
    for (const item of prompts) {
      assert.equal(item.prompt.split(' ').length, item.inputTokens);
      assert.equal(item.maxTokens, 7);
    }
    assert.deepEqual(await loadPrompts(source, 20), prompts);
  });

  test('JSONL: max_tokens per line, default otherwise', async () => {
    const prompts = await loadPrompts({ kind: 'jsonl', path: fixture('prompts.jsonl'), maxOutputTokens: 64 }, 2);
    assert.deepEqual(
      prompts.map((item) => [item.prompt, item.maxTokens]),
      [
        ['the quick brown fox', 16],
        ['jumps over the lazy dog', 64],
      ],
    );
  });

  test('a bad dataset line is a UserError naming file:line and why', async () => {
    await assert.rejects(
      loadPrompts({ kind: 'jsonl', path: fixture('bad.jsonl') }, 1),
      (error: unknown) => error instanceof UserError && /bad\.jsonl:2: not valid JSON/.test(error.message),
    );
    await assert.rejects(
      loadPrompts({ kind: 'sharegpt', path: fixture('bad-sharegpt.json'), seed: 0 }, 1),
      (error: unknown) => error instanceof UserError && /bad-sharegpt\.json:4: not valid JSON/.test(error.message),
    );
    await assert.rejects(
      loadPrompts({ kind: 'sharegpt', path: fixture('prompts.jsonl'), seed: 0 }, 1),
      (error: unknown) => error instanceof UserError && /prompts\.jsonl:\d+/.test(error.message),
    );
    await assert.rejects(loadPrompts({ kind: 'jsonl', path: fixture('missing.jsonl') }, 1), /cannot read dataset/);
  });
});

describe('workloads', () => {
  test('levels and labels', () => {
    assert.deepEqual(workloadLabels({ kind: 'sweep', concurrencies: [1, 8], requestsPerLevel: 4 }), ['c=1', 'c=8']);
    assert.deepEqual(workloadLabels({ kind: 'rate', requestsPerSecond: 4, arrival: 'poisson', maxInFlight: 2, requests: 3 }), ['rate=4/s']);
    assert.deepEqual(planLevels({ kind: 'single-stream', requests: 3 }), [{ label: 'single-stream', requests: 3, concurrency: 1 }]);
  });

  test('CLI flags map to workloads; --max-in-flight only where arrivals are open-loop', () => {
    const base = {} as const;
    assert.deepEqual(workloadFromFlags({ ...base }), { kind: 'single-stream', requests: 8 });
    assert.deepEqual(workloadFromFlags({ ...base, concurrency: '4' }), { kind: 'concurrency', concurrency: 4, requests: 32 });
    assert.deepEqual(workloadFromFlags({ ...base, concurrency: '1,4', requests: '10' }), { kind: 'sweep', concurrencies: [1, 4], requestsPerLevel: 10 });
    assert.deepEqual(workloadFromFlags({ ...base, rate: '2', requests: '5', maxInFlight: '16' }), {
      kind: 'rate',
      requestsPerSecond: 2,
      arrival: 'poisson',
      maxInFlight: 16,
      requests: 5,
    });
    assert.equal((workloadFromFlags({ rate: '2' }) as { maxInFlight: number }).maxInFlight, DEFAULT_MAX_IN_FLIGHT);
    // A closed loop keeps its own number in flight: a cap there was silently ignored.
    for (const closed of [{}, { concurrency: '4' }, { sessions: '2', turns: '2' }, { capacity: 'concurrency:1..8', capacitySlo: 'ttft-p99=1s' }]) {
      assert.throws(() => workloadFromFlags({ ...closed, maxInFlight: '8' }), /--max-in-flight caps the arrivals of --rate/);
    }
    assert.throws(() => workloadFromFlags({ ...base, rate: '2', concurrency: '3' }), /alternatives/);
    // Through the file's schema, as bench reads them: c=8 with 2 requests never has 8 in flight.
    assert.throws(() => parseBenchArgv(['bench', 'http://h:8000', '--concurrency', '8', '--requests', '2']), /--requests: needs at least concurrency requests/);
    assert.throws(
      () => parseBenchArgv(['bench', 'http://h:8000', '--concurrency', '1,8', '--requests', '4']),
      /--requests: needs at least the highest concurrency/,
    );
    assert.throws(() => workloadFromFlags({ ...base, concurrency: '0' }), /positive integer/);
  });
});
