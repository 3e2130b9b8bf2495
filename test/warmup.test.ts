import assert from 'node:assert/strict';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseBenchArgv } from '../src/cli/commands/bench.js';
import { firstTrialOutlier } from '../src/experiment/analysis/warmup-trend.js';
import { workNotes } from '../src/experiment/analysis/work-notes.js';
import { predictPlan } from '../src/experiment/plan/budget.js';
import { type DeclaredCosts, declaredStartWarmupMs, declaredTrialMs, TRIAL_OVERHEAD_MS } from '../src/experiment/plan/trial-estimate.js';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import type { ClientConfig, PlannedTrial, ResolvedExperiment } from '../src/experiment/spec/types.js';
import { planLevels } from '../src/load/level.js';
import { runBenchmark } from '../src/load/run.js';
import type { BenchOptions } from '../src/load/types.js';
import { planWarmups, WARMUP_LABEL } from '../src/load/warmup.js';
import { startSimulator } from '../src/simulate/server.js';
import { openStore } from '../src/store/db.js';
import { listTrials } from '../src/store/queries.js';
import type { TrialMetrics, TrialRecord } from '../src/store/types.js';
import { DEFAULT_WARMUP_PER_WORKLOAD, DEFAULT_WARMUP_REQUESTS } from '../src/util/defaults.js';
import { UserError } from '../src/util/errors.js';
import { tempDir, writeExperiment } from './support-experiment.js';
import { FakeExecutor, type FakeMachine } from './support-fake-executor.js';
import { trialRecord } from './support-trial-record.js';

test('first-trial rule: an outlier beyond the later trials range ± 3×MAD of their logarithms (at least 5%) is flagged; within it, or too few later trials, not', () => {
  const outlier = firstTrialOutlier([650, 700, 640], [1000, 1010, 990, 1005]);
  assert.ok(outlier);
  assert.equal(outlier.firstMedian, 650);
  assert.equal(outlier.laterMedian, 1002.5);
  assert.equal(outlier.firsts, 3);
  assert.equal(outlier.laters, 4);
  assert.ok(outlier.change < -0.3);
  // A first trial inside the spread of noisy later trials is not an outlier.
  assert.equal(firstTrialOutlier([900], [1000, 880, 1100]), undefined);
  // Ratios, not differences: CI's loaded box (acb3153) ran later trials at 250–428 tok/s, whose linear MAD reached
  // below zero and hid a first trial 6× slower; by ratio it stands out, and a 2× faster one as much as a 2× slower.
  assert.ok(firstTrialOutlier([57.2], [346, 428, 250]));
  assert.ok(firstTrialOutlier([500], [1000, 1100, 950]) && firstTrialOutlier([2000], [1000, 1100, 950]));
  assert.equal(firstTrialOutlier([700], [1000, 1250, 800]), undefined);
  // Values that are not all positive are judged by differences.
  assert.ok(firstTrialOutlier([-50], [0, 1, 2]));
  // Identical later trials (MAD 0): the 5% floor keeps a 3% difference from counting.
  assert.equal(firstTrialOutlier([970], [1000, 1000, 1000]), undefined);
  assert.ok(firstTrialOutlier([900], [1000, 1000, 1000]));
  // Faster first trials are outliers too (the rule is two-sided); one later trial cannot say what "later" is.
  assert.ok(firstTrialOutlier([1500], [1000, 1010]));
  assert.equal(firstTrialOutlier([500], [1000]), undefined);
  assert.equal(firstTrialOutlier([], [1000, 1000]), undefined);
  assert.equal(firstTrialOutlier([Number.NaN], [1000, 1000]), undefined);
});

function trial(variant: string, workload: string, afterStart: number | undefined, metrics: Partial<TrialMetrics> = {}): TrialRecord {
  return trialRecord(variant, workload, { outputTokensPerSecond: 1000, completed: 24, ...metrics, ...(afterStart !== undefined && { afterStart }) });
}

test('work note: a workload whose first trial after each start is slow, per variant, with the next step; older trials (no place recorded) say nothing', () => {
  const notes = workNotes([
    trial('baseline', 'c=8', 1, { outputTokensPerSecond: 650 }),
    trial('baseline', 'c=8', 2),
    trial('baseline', 'c=8', 1, { outputTokensPerSecond: 700 }),
    trial('baseline', 'c=8', 2, { outputTokensPerSecond: 1010 }),
    trial('baseline', 'single-stream', 1),
    trial('baseline', 'single-stream', 2),
    trial('baseline', 'single-stream', 2),
    trial('spec', 'c=8', 1, { outputTokensPerSecond: 700 }),
    trial('spec', 'c=8', 2),
    trial('old', 'c=8', undefined, { outputTokensPerSecond: 500 }),
    trial('old', 'c=8', undefined),
    trial('old', 'c=8', undefined),
  ]);
  assert.equal(notes.length, 1, notes.join('\n'));
  assert.equal(
    notes[0]!,
    'baseline c=8: first trial after a server start is an outlier: outputTokensPerSecond 675 (median of 2) vs 1,005 in the later trials (median of 2), ' +
      "−32.8%, outside their range widened by 3×MAD (by ratio, 5% at least): the warm-up did not bring the server to this workload's steady state; " +
      'raise client.warmup.requests or set client.warmup.perWorkload: true',
  );
  assert.match(notes[0]!, /raise client\.warmup\.requests or set client\.warmup\.perWorkload: true$/);
  // The experiment's metric decides: a latency metric of the same trials shows nothing here.
  assert.deepEqual(workNotes([trial('a', 'c=8', 1, { outputTokensPerSecond: 1 }), trial('a', 'c=8', 2), trial('a', 'c=8', 2)], 'ttftMedianMs'), []);
});

test('warm-up plan: one warm-up at most as wide as the first level, or one per level at its own concurrency or rate', () => {
  const sweep = planLevels({ kind: 'sweep', concurrencies: [1, 8], requestsPerLevel: 24 });
  assert.deepEqual(planWarmups({ warmupRequests: 1 }, sweep, 1), [{ beforeLevel: 0, plan: { label: WARMUP_LABEL, requests: 1, concurrency: 1 } }]);
  assert.deepEqual(planWarmups({ warmupRequests: 0, warmupPerLevel: true }, sweep, 1), []);
  assert.deepEqual(
    planWarmups({ warmupRequests: 1, warmupPerLevel: true }, sweep, 1).map((step) => [step.beforeLevel, step.plan.requests, step.plan.concurrency]),
    [
      [0, 1, 1],
      [1, 8, 8],
    ],
  );
  assert.deepEqual(
    planWarmups({ warmupRequests: 20, warmupPerLevel: true }, sweep, 1).map((step) => step.plan.requests),
    [20, 20],
  );
  // A duration: rounds of one request per slot; three load workers each get one request at least.
  assert.deepEqual(planWarmups({ warmupRequests: 1, warmupMs: 2000 }, planLevels({ kind: 'concurrency', concurrency: 8, requests: 8 }), 3), [
    { beforeLevel: 0, plan: { label: WARMUP_LABEL, requests: 8, concurrency: 8 }, durationMs: 2000 },
  ]);
  const rate = planLevels({ kind: 'rate', requestsPerSecond: 4.5, arrival: 'poisson', maxInFlight: 64, requests: 40 });
  const [step] = planWarmups({ warmupRequests: 1, warmupPerLevel: true }, rate, 1);
  assert.equal(step!.plan.requests, 5);
  assert.equal(step!.plan.rate?.requestsPerSecond, 4.5);
});

test('warm-up plan of a trace: what --warmup or --warmup-seconds asks, not one request per slot of its in-flight cap', () => {
  const trace = planLevels({ kind: 'trace', maxInFlight: 256 }, 12);
  assert.deepEqual(planWarmups({ warmupRequests: 2, warmupPerLevel: true }, trace, 1), [
    { beforeLevel: 0, plan: { label: WARMUP_LABEL, requests: 2, concurrency: 1 } },
  ]);
  // A duration: rounds of one request per load worker until its time is up.
  assert.deepEqual(planWarmups({ warmupRequests: 2, warmupMs: 500, warmupPerLevel: true }, trace, 4), [
    { beforeLevel: 0, plan: { label: WARMUP_LABEL, requests: 4, concurrency: 4 }, durationMs: 500 },
  ]);
  assert.deepEqual(planWarmups({ warmupRequests: 2, warmupMs: 500 }, trace, 1), [
    { beforeLevel: 0, plan: { label: WARMUP_LABEL, requests: 1, concurrency: 1 }, durationMs: 500 },
  ]);
  assert.deepEqual(planWarmups({ warmupRequests: 0, warmupPerLevel: true }, trace, 1), []);
});

test('load client: a trace replay warmed up with --warmup 2 sends 2 warm-up requests', async (t) => {
  const server = await sim(t);
  const { options } = parseBenchArgv([
    'bench',
    server.url,
    '--trace',
    join(TRACES, 'mooncake-sample.jsonl'),
    '--warmup',
    '2',
    '--trace-speedup',
    '8',
    '--prompt-salt',
    '1',
  ]);
  const result = await runBenchmark({ ...options, baseUrl: server.url, requestTimeoutMs: 30_000 });
  const measured = result.levels[0]!.completed + result.levels[0]!.failed;
  assert.ok(measured > 0);
  assert.equal(server.counters().requestsFinished, measured + 2);
});

const TRACES = fileURLToPath(new URL('../../examples/traces/', import.meta.url));

async function sim(t: TestContext) {
  const handle = await startSimulator({ startup: { loadMs: 0 }, decode: { ttftBaseMs: 2, tpotMs: 1, jitter: 0 } });
  t.after(() => handle.close());
  await handle.ready;
  return handle;
}

function benchOptions(url: string, overrides: Partial<BenchOptions>): BenchOptions {
  return {
    baseUrl: url,
    backend: 'openai-completions',
    workload: { kind: 'sweep', concurrencies: [1, 4], requestsPerLevel: 6 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 8 }, outputTokens: { kind: 'fixed', value: 4 }, seed: 1 },
    warmupRequests: 1,
    ignoreEos: true,
    requestTimeoutMs: 10_000,
    specMetrics: 'none',
    ...overrides,
  };
}

test('load client: per-level warm-up sends each level its own warm-up (1 at c=1, 4 at c=4), none measured', async (t) => {
  const server = await sim(t);
  const result = await runBenchmark(benchOptions(server.url, { warmupPerLevel: true }));
  assert.deepEqual(
    result.levels.map((level) => level.completed),
    [6, 6],
  );
  assert.equal(server.counters().requestsFinished, 12 + 1 + 4);
  const once = await sim(t);
  await runBenchmark(benchOptions(once.url, {}));
  assert.equal(once.counters().requestsFinished, 12 + 1);
});

test('load client: a duration warm-up repeats whole rounds until its time is up', async (t) => {
  const server = await sim(t);
  const started = performance.now();
  await runBenchmark(benchOptions(server.url, { workload: { kind: 'concurrency', concurrency: 2, requests: 2 }, warmupMs: 150 }));
  assert.ok(performance.now() - started >= 150);
  const warmup = server.counters().requestsFinished - 2;
  assert.ok(warmup >= 2 && warmup % 2 === 0, `warm-up requests: ${warmup}`);
});

function client(warmup: ClientConfig['warmup']): ClientConfig {
  return {
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 16 }, outputTokens: { kind: 'fixed', value: 10 }, seed: 1 },
    warmup,
    ignoreEos: true,
    requestTimeoutMs: 60_000,
    cache: 'cold',
  };
}

test('estimates: a per-trial warm-up is in every trial; a per-workload one once per workload and server start', () => {
  const costs: DeclaredCosts = { startupMs: 0, requestMs: () => 100, basis: 'test' };
  const c8 = { kind: 'concurrency' as const, concurrency: 8, requests: 16 };
  // 16 requests at c=8: two rounds; one warm-up request: one more round.
  assert.equal(declaredTrialMs(costs, c8, client({ requests: 1, perWorkload: false })), TRIAL_OVERHEAD_MS + 300);
  assert.equal(declaredTrialMs(costs, c8, client({ requests: 1, perWorkload: true })), TRIAL_OVERHEAD_MS + 200);
  assert.equal(declaredStartWarmupMs(costs, c8, client({ requests: 1, perWorkload: true })), 100);
  assert.equal(declaredStartWarmupMs(costs, c8, client({ requests: 1, durationMs: 5000, perWorkload: true })), 5000);
  assert.equal(declaredStartWarmupMs(costs, c8, client({ requests: 1, perWorkload: false })), 0);
  const experiment = {
    variants: [
      { name: 'a', serverKey: 'k' },
      { name: 'b', serverKey: 'j' },
    ],
  } as unknown as ResolvedExperiment;
  const planned = (index: number, variant: string): PlannedTrial => ({
    index,
    block: 0,
    repetition: 0,
    variant,
    serverKey: variant === 'a' ? 'k' : 'j',
    workload: 'c=8',
  });
  const trials = [planned(0, 'a'), planned(1, 'a'), planned(2, 'b'), planned(3, 'a')];
  const pair = (variant: string) => JSON.stringify([variant, 'c=8']);
  const estimate = { ms: 200, source: 'declared' as const, samples: 0 as const, basis: 'test' };
  const prediction = predictPlan({ trials }, experiment, {
    startups: { k: { ...estimate, ms: 0 }, j: { ...estimate, ms: 0 } },
    trials: { [pair('a')]: estimate, [pair('b')]: estimate },
    startWarmups: { [pair('a')]: 50, [pair('b')]: 50 },
  });
  // a: starts twice (trials 0-1, then 3): two warm-ups; b: one.
  assert.equal(prediction.measureMs, 4 * 200 + 3 * 50);
});

test('experiment file: warmupRequests maps onto warmup.requests; a variant overrides parts; one way to say each thing', (t) => {
  const dir = tempDir(t, 'warmup-file');
  const prompts = { kind: 'synthetic', inputTokens: 16, outputTokens: 24, seed: 3 };
  const legacy = loadExperiment(writeExperiment(dir, 'legacy.yaml', { client: { prompts, warmupRequests: 3 } }));
  assert.deepEqual(legacy.variants[0]!.client.warmup, { requests: 3, perWorkload: DEFAULT_WARMUP_PER_WORKLOAD });
  const defaults = loadExperiment(writeExperiment(dir, 'defaults.yaml', { client: { prompts } }));
  assert.deepEqual(defaults.variants[0]!.client.warmup, { requests: DEFAULT_WARMUP_REQUESTS, perWorkload: DEFAULT_WARMUP_PER_WORKLOAD });
  const mixed = loadExperiment(
    writeExperiment(dir, 'mixed.yaml', {
      client: { prompts, warmup: { seconds: '2s', perWorkload: false } },
      variants: { a: {}, b: { client: { warmup: { requests: 5 } } }, c: { client: { warmupRequests: 0 } } },
    }),
  );
  assert.deepEqual(
    mixed.variants.map((variant) => variant.client.warmup),
    [
      { requests: DEFAULT_WARMUP_REQUESTS, durationMs: 2000, perWorkload: false },
      { requests: 5, perWorkload: false },
      { requests: 0, perWorkload: false },
    ],
  );
  assert.throws(
    () => loadExperiment(writeExperiment(dir, 'both.yaml', { client: { prompts, warmupRequests: 1, warmup: { perWorkload: true } } })),
    /client\.warmupRequests: give warmup\.requests instead \(not both\)/,
  );
  assert.throws(
    () => loadExperiment(writeExperiment(dir, 'count-and-time.yaml', { client: { prompts, warmup: { requests: 2, seconds: 5 } } })),
    /client\.warmup: give requests or seconds, not both/,
  );
});

/**
 * A fake machine whose server decodes 1.5× slower while its batch is larger than any it ran since its start, as
 * the simulator's --new-batch-ms: a warm-up reaches min(requests, concurrency) in flight, a per-level one the
 * workload's concurrency.
 */
function newBatchMachine(): FakeMachine {
  const largest = new Map<string, number>();
  return ({ options }) => {
    const concurrency = options.workload.kind === 'concurrency' ? options.workload.concurrency : 1;
    const warmedTo = options.warmupRequests > 0 ? (options.warmupPerLevel ? concurrency : Math.min(options.warmupRequests, concurrency)) : 0;
    const before = Math.max(largest.get(options.baseUrl) ?? 0, warmedTo);
    largest.set(options.baseUrl, Math.max(before, concurrency));
    return { tpotMs: concurrency > before ? 6 : 4 };
  };
}

test('runner: trials record their place after the start; a per-trial warm-up at c=1 is flagged, a per-workload one warms c=8 once', async (t) => {
  const dir = tempDir(t, 'warmup-fake');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  const run = async (name: string, warmup: Record<string, unknown>) => {
    const file = writeExperiment(dir, `${name}.yaml`, {
      name,
      server: { command: ['fake-server', '--port', '{port}'], readyTimeout: '5m' },
      telemetry: { enabled: false },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 24, seed: 3 }, warmup },
      workloads: [
        { kind: 'single-stream', requests: 3 },
        { kind: 'concurrency', concurrency: 8, requests: 8 },
      ],
      trials: 4,
    });
    const executor = new FakeExecutor(newBatchMachine());
    const outcome = await runExperiment({ db, experiment: loadExperiment(file), executor, workDir: dir, log: () => {} });
    await executor.close();
    assert.equal(outcome.status, 'done');
    return listTrials(db, outcome.runId, []);
  };
  const once = await run('once', { requests: 1, perWorkload: false });
  const places = once.filter((trial) => trial.workload === 'c=8').map((trial) => trial.metrics.afterStart);
  assert.deepEqual(places, [1, 2, 3, 4]);
  const notes = workNotes(once);
  assert.equal(notes.length, 1, notes.join('\n'));
  assert.match(
    notes[0]!,
    /^baseline c=8: first trial after a server start is an outlier: outputTokensPerSecond \d+ \(median of 1\) vs \d+ in the later trials \(median of 3\), −3\d\.\d%/,
  );
  assert.deepEqual(workNotes(await run('per-workload', { requests: 1, perWorkload: true })), []);
});

test('bench flags: a bad --warmup-seconds or --request-timeout names its flag (exit 2)', () => {
  const usage = (message: RegExp) => (error: unknown) => error instanceof UserError && error.exitCode === 2 && message.test(error.message);
  const argv = (...flags: string[]) => parseBenchArgv(['bench', 'http://h:8000', ...flags]);
  assert.throws(() => argv('--warmup-seconds', '0'), usage(/^--warmup-seconds: duration "0" must be positive$/));
  assert.throws(() => argv('--warmup-seconds', 'soon'), usage(/^--warmup-seconds: invalid duration "soon"/));
  assert.throws(() => argv('--request-timeout', '-1s'), usage(/^--request-timeout: invalid duration "-1s"/));
  assert.equal(argv('--warmup-seconds', '2s').options.warmupMs, 2000);
});
