/** The capacity search's pure parts: the bisection's next level, a step's verdict, the result and its notes, the spellings. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { verdictOf } from '../src/cli/bench-verdict.js';
import { parseBenchArgv } from '../src/cli/commands/bench.js';
import { benchArgv } from '../src/exec/remote-bench.js';
import { declaredTrialMs, TRIAL_OVERHEAD_MS } from '../src/experiment/plan/trial-estimate.js';
import type { ClientConfig } from '../src/experiment/spec/types.js';
import { capacityOf, capacitySloSpec, judgeStep, midpoint, nextCapacityLevel, parseCapacitySlo, searchCapacity } from '../src/load/capacity.js';
import { workloadSchema } from '../src/load/config.js';
import type { LevelPlan } from '../src/load/level.js';
import type { BenchResult, ClientOptions, LevelResult, RequestSample, Workload } from '../src/load/types.js';
import { summarizeLevel } from '../src/metrics/summary.js';
import { capacityLines } from '../src/metrics/table.js';
import { UserError } from '../src/util/errors.js';

type Capacity = Extract<Workload, { kind: 'capacity' }>;
const rate: Capacity = { kind: 'capacity', over: 'rate', min: 0.5, max: 32, steps: 6, requestsPerStep: 100, slo: { ttftP99Ms: 500 } };
const concurrency: Capacity = { kind: 'capacity', over: 'concurrency', min: 1, max: 64, steps: 6, requestsPerStep: 100, slo: { tpotP99Ms: 50 } };

/** Walk the search against a server whose steps pass exactly up to `capacity`; the levels it measures, in order. */
function walk(workload: Capacity, capacity: number): number[] {
  const steps: Array<{ at: number; passed: boolean }> = [];
  for (let at = nextCapacityLevel(workload, steps); at !== undefined; at = nextCapacityLevel(workload, steps)) steps.push({ at, passed: at <= capacity });
  return steps.map((step) => step.at);
}

function level(label: string, latencyMs: number, failed = 0): LevelResult {
  const samples: RequestSample[] = Array.from({ length: 10 }, (_, index) =>
    index < failed
      ? { index, sentAtMs: 0, inputTokens: 8, outputTokens: 0, itlMs: [], error: { kind: 'http-5xx', message: 'HTTP 500' } }
      : { index, sentAtMs: 0, inputTokens: 8, outputTokens: 4, ttftMs: latencyMs, tpotMs: latencyMs / 10, itlMs: [], e2eMs: latencyMs * 2 },
  );
  return summarizeLevel({ label, durationS: 1, samples, tokenCounts: { method: 'server-usage', trusted: false } });
}

describe('bisection', () => {
  test('rate: geometric midpoints from the middle of the range (3 significant figures), steps levels in all', () => {
    assert.equal(midpoint('rate', 0.5, 32), 4);
    assert.deepEqual(walk(rate, 6), [4, 11.3, 6.72, 5.18, 5.9, 6.3]);
  });

  test('concurrency: whole requests in flight; stops early once the bracket is two adjacent levels', () => {
    assert.deepEqual(walk(concurrency, 20), [8, 23, 14, 18, 20, 21]);
    assert.deepEqual(walk({ ...concurrency, min: 1, max: 4 }, 2), [2, 3]);
    assert.equal(midpoint('concurrency', 6, 7), undefined);
  });

  test('every step passed: max is measured at the end; every step failed: min is; never more than steps + 1', () => {
    const all = walk(concurrency, 1000);
    assert.equal(all.at(-1), 64);
    assert.ok(all.length <= concurrency.steps + 1);
    const none = walk(concurrency, 0);
    assert.equal(none.at(-1), 1);
    assert.ok(none.length <= concurrency.steps + 1);
  });
});

describe('a step and the result', () => {
  test('a step passes when every p99 is within its limit and no request failed; else the first reason', () => {
    assert.deepEqual(judgeStep(level('c=1', 400), { ttftP99Ms: 500 }), { passed: true });
    assert.deepEqual(judgeStep(level('c=1', 600), { ttftP99Ms: 500 }), { passed: false, why: 'TTFT p99 600 ms > 500 ms' });
    assert.deepEqual(judgeStep(level('c=1', 100, 1), { ttftP99Ms: 500 }), { passed: false, why: '1 request(s) failed' });
    assert.deepEqual(judgeStep(level('c=1', 100), { ttftP99Ms: 500, e2eP99Ms: 150 }), { passed: false, why: 'E2E p99 200 ms > 150 ms' });
  });

  test('the value is the highest passing level, with the lowest failing one above it', () => {
    const missed = 'TPOT p99 60.0 ms > 50.0 ms';
    const search = capacityOf(concurrency, [
      { at: 8, label: 'c=8', passed: true },
      { at: 23, label: 'c=23', passed: false, why: missed },
      { at: 14, label: 'c=14', passed: true },
      { at: 18, label: 'c=18', passed: false, why: missed },
      { at: 16, label: 'c=16', passed: true },
      { at: 17, label: 'c=17', passed: false, why: missed },
    ]);
    assert.deepEqual([search.value, search.upper, search.notes], [16, 17, []]);
  });

  test('the level above the capacity failed requests, or lies far above it: the breaking level was not measured, said', () => {
    const failing = capacityOf(concurrency, [
      { at: 8, label: 'c=8', passed: true },
      { at: 9, label: 'c=9', passed: false, why: '3 request(s) failed' },
    ]);
    assert.deepEqual(failing.notes, [
      'c=9 failed (3 request(s) failed) rather than missing the latency SLOs: where latency breaks was not measured; the capacity is bounded by failures',
    ]);
    const wide = capacityOf({ ...rate, steps: 1 }, [
      { at: 4, label: 'rate=4/s', passed: true },
      { at: 32, label: 'rate=32/s', passed: false, why: 'TTFT p99 900 ms > 500 ms' },
    ]);
    assert.deepEqual(wide.notes, ['the SLOs break somewhere between 4.00 req/s and 32.0 req/s, never measured closer in 1 steps; raise steps to narrow it']);
    // Close enough: the last bisection of a 6-step rate search.
    const close = capacityOf(rate, [
      { at: 6.3, label: 'rate=6.3/s', passed: true },
      { at: 6.72, label: 'rate=6.72/s', passed: false, why: 'TTFT p99 900 ms > 500 ms' },
    ]);
    assert.deepEqual(close.notes, []);
  });

  test('no level met the SLOs: the cause and a next step that can work (never "lower min" at one request in flight)', () => {
    const atOne = capacityOf(concurrency, [
      { at: 8, label: 'c=8', passed: false, why: 'TPOT p99 400 ms > 50.0 ms' },
      { at: 1, label: 'c=1', passed: false, why: 'TPOT p99 80.0 ms > 50.0 ms' },
    ]);
    assert.deepEqual(atOne.notes.slice(0, 1), [
      '0: even one request at a time (c=1) missed the SLOs (TPOT p99 80.0 ms > 50.0 ms): no load meets them on this server; relax the SLOs or make the server faster',
    ]);
    const failed = capacityOf(concurrency, [{ at: 1, label: 'c=1', passed: false, why: '10 request(s) failed' }]);
    assert.match(failed.notes[0]!, /^0: at the lowest level measured, c=1, the server did not serve every request \(10 request\(s\) failed\); fix that/);
    const slowRate = capacityOf(rate, [{ at: 0.5, label: 'rate=0.5/s', passed: false, why: 'TTFT p99 900 ms > 500 ms' }]);
    assert.match(slowRate.notes[0]!, /^0: even the lowest level \(0\.50 req\/s\) missed the SLOs \(TTFT p99 900 ms > 500 ms\); lower min/);
  });

  test('even min failed: 0 with a note, not a missing value; max passed: "≥ max"; few requests: the p99 note', () => {
    const none = capacityOf({ ...concurrency, min: 2 }, [
      { at: 8, label: 'c=8', passed: false, why: 'TPOT p99 90.0 ms > 50.0 ms' },
      { at: 2, label: 'c=2', passed: false, why: 'TPOT p99 60.0 ms > 50.0 ms' },
    ]);
    assert.equal(none.value, 0);
    assert.match(none.notes.join('\n'), /^0: even the lowest level \(2 in flight\) missed the SLOs \(TPOT p99 60\.0 ms > 50\.0 ms\); lower min/);
    const all = capacityOf({ ...rate, requestsPerStep: 20 }, [
      { at: 4, label: 'rate=4/s', passed: true },
      { at: 32, label: 'rate=32/s', passed: true },
    ]);
    assert.deepEqual([all.value, all.upper], [32, undefined]);
    assert.match(all.notes[0]!, /^≥ 32.0 req\/s: the highest level asked for met the SLOs; raise max/);
    assert.match(all.notes[1]!, /^p99 of 20 requests per step is close to their slowest one/);
    // The headline says the same: a lower bound, not the capacity.
    assert.equal(capacityLines(all)[0], 'capacity: ≥ 32.0 req/s');
    assert.equal(capacityLines(none)[0], 'capacity: 0 in flight (c=2 missed the SLOs)');
  });

  test('searchCapacity marks the level standing for the search: the capacity, else the lowest step', async () => {
    const measure = (capacityMs: number) => (plan: LevelPlan) => Promise.resolve(level(plan.label, 10 * (plan.concurrency ?? 1) - capacityMs));
    const found = await searchCapacity({ ...concurrency, slo: { ttftP99Ms: 100 } }, measure(0));
    assert.deepEqual(
      found.filter((step) => step.capacity).map((step) => [step.label, step.capacity?.value]),
      [['c=10', 10]],
    );
    const none = await searchCapacity({ ...concurrency, slo: { ttftP99Ms: 1 } }, measure(0));
    assert.deepEqual(
      none.filter((step) => step.capacity).map((step) => [step.label, step.capacity?.value]),
      [['c=1', 0]],
    );
  });
});

test("bench's exit status judges the level standing for the search, not the steps that missed by failing requests", async () => {
  const levels = await searchCapacity({ ...concurrency, slo: { ttftP99Ms: 100 } }, (plan) =>
    Promise.resolve(level(plan.label, 50, (plan.concurrency ?? 1) > 10 ? 2 : 0)),
  );
  assert.ok(levels.some((step) => step.failed > 0));
  const result: BenchResult = {
    schemaVersion: 1,
    startedAt: '',
    baseUrl: 'http://h',
    backend: 'openai-completions',
    tokenCountMethod: 'server-usage',
    interrupted: false,
    levels,
  };
  const options = { ignoreEos: true, maxFailedFraction: 0 } as ClientOptions;
  assert.deepEqual(verdictOf(result, undefined, options), { code: 0 });
  const none = await searchCapacity(concurrency, (plan) => Promise.resolve(level(plan.label, 50, 2)));
  assert.equal(verdictOf({ ...result, levels: none }, undefined, options).code, 1, 'failures at the lowest level: not a measurement');
});

test('the plan estimate counts steps levels at the middle of the range', () => {
  const costs = { startupMs: 0, requestMs: () => 100, basis: 'test' };
  const prompts = { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 8 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 0 } as const;
  const bare = { prompts, warmup: { requests: 0, perWorkload: false } } as unknown as ClientConfig;
  const search = declaredTrialMs(costs, { ...concurrency, min: 1, max: 16, steps: 5, requestsPerStep: 16 }, bare)!;
  const middle = declaredTrialMs(costs, { kind: 'concurrency', concurrency: 4, requests: 16 }, bare)!;
  assert.equal(search - TRIAL_OVERHEAD_MS, 5 * (middle - TRIAL_OVERHEAD_MS));
});

describe('spellings', () => {
  test('--capacity-slo round trip; a bare number is refused (seconds or ms would be a guess)', () => {
    assert.deepEqual(parseCapacitySlo('ttft-p99=500ms,tpot-p99=50ms,e2e-p99=2s'), { ttftP99Ms: 500, tpotP99Ms: 50, e2eP99Ms: 2000 });
    assert.equal(capacitySloSpec({ ttftP99Ms: 500, e2eP99Ms: 2000 }), 'ttft-p99=500ms,e2e-p99=2000ms');
    assert.throws(() => parseCapacitySlo('ttft-p99=500'), /cannot read "ttft-p99=500": expected ttft-p99, tpot-p99, e2e-p99=DURATION/);
    assert.throws(() => parseCapacitySlo('ttft-p99=1s,ttft-p99=2s'), /"ttft-p99" is given twice/);
    // A bad bound's hint shows the range form, not a bare number.
    assert.throws(
      () => parseBenchArgv(['bench', 'http://h:8000', '--capacity', 'rate:0..4', '--capacity-slo', 'ttft-p99=1s']),
      (error: unknown) => error instanceof UserError && error.exitCode === 2 && error.hint === 'e.g. --capacity rate:0.5..32',
    );
  });

  test('the file schema: defaults written out for a rate search; bounds per axis', () => {
    const parsed = workloadSchema.parse({ kind: 'capacity', over: 'rate', min: 0.5, max: 32, requestsPerStep: 50, slo: { ttftP99Ms: 500 } });
    assert.deepEqual(parsed, { ...rate, requestsPerStep: 50, arrival: 'poisson', maxInFlight: 256 });
    const refused = (extra: object) => !workloadSchema.safeParse({ ...concurrency, ...extra }).success;
    assert.ok(refused({ min: 8, max: 8 }), 'min must be below max');
    assert.ok(refused({ min: 1.5 }), 'whole requests in flight');
    assert.ok(refused({ arrival: 'poisson' }), 'arrivals shape a rate search only');
    assert.ok(refused({ slo: {} }), 'at least one SLO');
    assert.ok(refused({ requestsPerStep: 32 }), 'fewer requests than max never reach max in flight');
  });

  test('object → benchArgv → bench flag parsing → the same object', () => {
    const base = {
      backend: 'openai-completions',
      warmupRequests: 1,
      warmupPerLevel: true,
      ignoreEos: true,
      requireFullOutput: true,
      maxFailedFraction: 0,
    } as const;
    const prompts = { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 16 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 0 } as const;
    const workloads: Capacity[] = [
      { ...rate, arrival: 'gamma', burstiness: 0.5, maxInFlight: 64, slo: { ttftP99Ms: 500, tpotP99Ms: 50.5 } },
      { ...concurrency, steps: 4, requestsPerStep: 64, slo: { e2eP99Ms: 2000 } },
    ];
    for (const workload of workloads) {
      const options: ClientOptions = { ...base, prompts, workload, requestTimeoutMs: 60_000, specMetrics: 'auto', workers: 1 };
      assert.deepEqual(parseBenchArgv(benchArgv(options, 'http://h:8000', 'r.json')).options, options);
    }
  });
});
