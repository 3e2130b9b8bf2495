import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseSimConfig, resolveSimConfig } from '../src/simulate/config.js';
import { renderMetrics, SimMetrics, statsLines, sumCounters } from '../src/simulate/metrics.js';
import {
  batchFactor,
  driftFactor,
  envSpeedup,
  expectedAcceptanceRate,
  expectedDecodeTokensPerSecond,
  expectedDraftMs,
  expectedE2eMs,
  expectedStepMs,
  expectedTokensPerStep,
  expectedTpotMs,
  expectedTtftMs,
  expectedVerifyMs,
  levelCandidates,
  sampleAcceptedDrafts,
  sampleJitter,
  sampleStepMs,
} from '../src/simulate/model.js';
import { BatchScheduler } from '../src/simulate/scheduler.js';
import { countTokens } from '../src/simulate/text.js';
import { isUserError } from '../src/util/errors.js';
import { deriveSeed, mulberry32 } from '../src/util/random.js';

const withSpec = (draftTokens: number, acceptance: number) => parseSimConfig({ decode: { tpotMs: 10, spec: { draftTokens, acceptance, draftOverhead: 0.1 } } });

describe('speculative decoding model', () => {
  test("EAGLE tree: SGLang's topk-1 chain rule, candidates per depth, tuned NCCL speeding the verify pass only", () => {
    const eagle = (steps: number, topk: number, draftTokens: number) =>
      parseSimConfig({
        envSpeedups: [{ name: 'NCCL_PROTO', value: 'LL', factor: 1.5 }],
        decode: { tpotMs: 10, spec: { draftTokens, steps, topk, acceptance: 0.8, acceptanceDecay: 0.5, draftOverhead: 0.1, draftStepCost: 0.2 } },
      });
    // topk 1: draft tokens = steps (+ the root), whatever was asked; the request is kept for SGLang's warning.
    const chain = eagle(2, 1, 5);
    assert.equal(chain.decode.spec.draftTokens, 2);
    assert.equal(chain.decode.spec.requestedDraftTokens, 5);
    assert.deepEqual(levelCandidates(chain), [1, 1]);
    assert.ok(Math.abs(expectedTokensPerStep(chain) - (1 + 0.8 + 0.8 * 0.4)) < 1e-12);
    // topk 2: the drafts beyond the chain are alternatives at the shallowest depths, topk at most per depth.
    assert.deepEqual(levelCandidates(eagle(2, 2, 3)), [2, 1]);
    assert.deepEqual(levelCandidates(eagle(1, 2, 3)), [2]);
    assert.ok(Math.abs(expectedTokensPerStep(eagle(1, 2, 2)) - (1 + (1 - 0.2 ** 2))) < 1e-12);
    // Draft steps cost the same with or without the NCCL tuning; the verify pass does not.
    const tree = eagle(3, 2, 4);
    assert.equal(expectedDraftMs(tree), 10 * 0.2 * 3);
    assert.ok(Math.abs(expectedVerifyMs(tree, 1, { NCCL_PROTO: 'LL' }) - (10 * 1.4) / 1.5) < 1e-12);
    assert.equal(expectedStepMs(tree, 1, {}), expectedVerifyMs(tree) + expectedDraftMs(tree));
  });

  test('expected tokens per step is the truncated geometric mean (1 - p^(k+1)) / (1 - p)', () => {
    assert.equal(expectedTokensPerStep(withSpec(0, 0.7)), 1);
    assert.equal(expectedTokensPerStep(withSpec(4, 1)), 5);
    assert.equal(expectedTokensPerStep(withSpec(4, 0)), 1);
    assert.ok(Math.abs(expectedTokensPerStep(withSpec(3, 0.5)) - 1.875) < 1e-12);
  });

  test('simulated accepted runs average to the expected tokens per step (fixed seed)', () => {
    for (const [k, p] of [
      [4, 0.7],
      [2, 0.3],
      [8, 0.9],
    ] as const) {
      const config = withSpec(k, p);
      const rng = mulberry32(42);
      const draws = 40_000;
      let tokens = 0;
      let maxAccepted = 0;
      for (let i = 0; i < draws; i += 1) {
        const accepted = sampleAcceptedDrafts(config, rng);
        maxAccepted = Math.max(maxAccepted, accepted);
        tokens += accepted + 1;
      }
      const mean = tokens / draws;
      const expected = expectedTokensPerStep(config);
      assert.ok(Math.abs(mean - expected) / expected < 0.02, `k=${k} p=${p}: simulated ${mean} vs expected ${expected}`);
      assert.ok(maxAccepted <= k);
      assert.ok(Math.abs(expectedAcceptanceRate(config)! - (expected - 1) / k) < 1e-12);
    }
    assert.equal(expectedAcceptanceRate(withSpec(0, 0.7)), undefined);
  });

  test('a verification step costs tpot * (1 + draftOverhead * k) and tpot per token divides by tokens per step', () => {
    const config = withSpec(4, 0.7);
    assert.ok(Math.abs(expectedStepMs(config) - 14) < 1e-9);
    assert.ok(Math.abs(expectedTpotMs(config) - 14 / expectedTokensPerStep(config)) < 1e-9);
  });
});

describe('speculative decoding under load (--spec-verify-batch-cost)', () => {
  // SGLang's EAGLE space (steps × topk × draft tokens, the root counted as SGLang counts it) at three loads.
  const eagleAt = (steps: number, topk: number, numDraftTokens: number, verifyBatchCost: number) =>
    parseSimConfig({
      decode: {
        tpotMs: 10,
        spec: { steps, topk, draftTokens: numDraftTokens - 1, acceptance: 0.8, acceptanceDecay: 0.9, draftOverhead: 0.02, draftStepCost: 0.1, verifyBatchCost },
      },
    });
  const bestSteps = (concurrency: number, verifyBatchCost: number): number => {
    let best = { steps: 0, value: 0 };
    for (let steps = 1; steps <= 6; steps += 1)
      for (const topk of [1, 2, 4, 8])
        for (let draft = 2; draft <= Math.min(16, steps * topk + 1); draft += 1) {
          const value = expectedDecodeTokensPerSecond(eagleAt(steps, topk, draft, verifyBatchCost), concurrency);
          if (value > best.value) best = { steps, value };
        }
    return best.steps;
  };

  test('the best draft depth falls as concurrency rises; without the cost it does not move', () => {
    const [c1, c8, c32] = [1, 8, 32].map((concurrency) => bestSteps(concurrency, 0.01)) as [number, number, number];
    assert.ok(c1 > c8 && c8 > c32, `best steps ${c1} at c=1, ${c8} at c=8, ${c32} at c=32`);
    assert.deepEqual(
      [1, 8, 32].map((concurrency) => bestSteps(concurrency, 0)),
      [bestSteps(1, 0), bestSteps(1, 0), bestSteps(1, 0)],
    );
  });

  test('the verify pass costs tpot * (slowdown * (1 + draftOverhead * k) + verifyBatchCost * batch * k); throughput is batch / tpot', () => {
    const config = parseSimConfig({ decode: { tpotMs: 10, concurrencySlowdown: 0.02, spec: { draftTokens: 4, draftOverhead: 0.1, verifyBatchCost: 0.05 } } });
    assert.ok(Math.abs(expectedVerifyMs(config, 8) - 10 * (1.14 * 1.4 + 0.05 * 8 * 4)) < 1e-9);
    assert.ok(Math.abs(expectedDecodeTokensPerSecond(config, 8) - 8000 / expectedTpotMs(config, 8)) < 1e-9);
  });
});

describe('timing model', () => {
  const config = parseSimConfig({
    decode: { ttftBaseMs: 20, prefillMsPerToken: 0.5, tpotMs: 10, concurrencySlowdown: 0.1 },
    envSpeedups: [
      { name: 'NCCL_PROTO', value: 'LL', factor: 1.25 },
      { name: 'OTHER', value: '1', factor: 2 },
    ],
  });

  test('concurrency slows prefill and decode linearly in the number of running requests', () => {
    assert.equal(batchFactor(config, 1), 1);
    assert.equal(batchFactor(config, 0), 1);
    assert.ok(Math.abs(batchFactor(config, 11) - 2) < 1e-12);
    assert.equal(expectedTtftMs(config, 100), 70);
    assert.ok(Math.abs(expectedTtftMs(config, 100, 11) - 140) < 1e-9);
    assert.ok(Math.abs(expectedStepMs(config, 11) - 20) < 1e-9);
  });

  test('env speedups apply only when the variable has exactly the given value, and multiply', () => {
    assert.equal(envSpeedup(config, {}), 1);
    assert.equal(envSpeedup(config, { NCCL_PROTO: 'Simple' }), 1);
    assert.equal(envSpeedup(config, { NCCL_PROTO: 'LL' }), 1.25);
    assert.equal(envSpeedup(config, { NCCL_PROTO: 'LL', OTHER: '1' }), 2.5);
    assert.equal(expectedStepMs(config, 1, { NCCL_PROTO: 'LL' }), 8);
    assert.equal(expectedE2eMs(config, 100, 11, 1, { NCCL_PROTO: 'LL' }), 70 + 10 * 8);
  });

  test('machine drift lengthens steps linearly in wall-clock minutes since its origin, never below 0.1×', () => {
    const drifting = (pctPerMin: number) => parseSimConfig({ decode: { drift: { pctPerMin } } });
    assert.equal(driftFactor(parseSimConfig({}), 600_000), 1);
    assert.ok(Math.abs(driftFactor(drifting(2), 90_000) - 1.03) < 1e-12);
    assert.ok(Math.abs(driftFactor(drifting(-10), 60_000) - 0.9) < 1e-12);
    assert.equal(driftFactor(drifting(-100), 120_000), 0.1);
  });

  test('jitter multiplies by a mean-1 factor whose spread matches the jitter fraction', () => {
    const rng = mulberry32(7);
    const samples = Array.from({ length: 40_000 }, () => sampleJitter(0.2, rng));
    const mean = samples.reduce((sum, value) => sum + value, 0) / samples.length;
    const sd = Math.sqrt(samples.reduce((sum, value) => sum + (value - mean) ** 2, 0) / samples.length);
    assert.ok(Math.abs(mean - 1) < 0.01, `mean ${mean}`);
    assert.ok(Math.abs(sd - 0.2) < 0.01, `sd ${sd}`);
    assert.ok(samples.every((value) => value > 0));
    assert.equal(sampleJitter(0, rng), 1);
  });

  test('sampled step times are reproducible for a seed and average to the expected step', () => {
    const jittery = parseSimConfig({ decode: { tpotMs: 10, jitter: 0.3 } });
    const draw = (seed: number) => {
      const rng = mulberry32(seed);
      return Array.from({ length: 20_000 }, () => sampleStepMs(jittery, 1, 2, rng));
    };
    assert.deepEqual(draw(3).slice(0, 5), draw(3).slice(0, 5));
    assert.notDeepEqual(draw(3).slice(0, 5), draw(4).slice(0, 5));
    const samples = draw(3);
    const mean = samples.reduce((sum, value) => sum + value, 0) / samples.length;
    assert.ok(Math.abs(mean - 5) < 0.1, `mean ${mean}`);
    assert.notEqual(deriveSeed(1, 1), deriveSeed(1, 2));
  });
});

describe('config', () => {
  test('defaults fill a partial config and unknown keys are refused', () => {
    const config = parseSimConfig({ decode: { tpotMs: 3 } });
    assert.equal(config.decode.tpotMs, 3);
    assert.equal(config.model, 'sim-llama-8b');
    assert.equal(config.host, '127.0.0.1');
    assert.equal(config.decode.spec.draftTokens, 0);
    assert.ok(config.startup.phases.length > 0);
    assert.throws(
      () => parseSimConfig({ decode: { tpotMS: 3 } }),
      (error) => isUserError(error) && /decode/.test(error.message),
    );
    assert.throws(
      () => parseSimConfig({ decode: { spec: { acceptance: 1.5 } } }),
      (error) => isUserError(error) && /decode\.spec\.acceptance/.test(error.message),
    );
  });

  test('flags override a config file, and errors name the flag or the file line', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-sim-config-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'sim.yaml');
    writeFileSync(path, 'model: from-file\ndecode:\n  tpotMs: 7\n  seed: 9\n');
    const config = resolveSimConfig(path, { decode: { tpotMs: 2 } }, (key) => `--${key}`);
    assert.equal(config.model, 'from-file');
    assert.equal(config.decode.tpotMs, 2);
    assert.equal(config.decode.seed, 9);
    assert.throws(
      () => resolveSimConfig(path, { decode: { jitter: -1 } }, (key) => (key === 'decode.jitter' ? '--jitter' : key)),
      (error) => isUserError(error) && error.message.includes('--jitter') && error.exitCode === 2,
    );
    writeFileSync(path, 'decode:\n  tpotMs: fast\n');
    assert.throws(
      () => resolveSimConfig(path, {}, (key) => key),
      (error) => isUserError(error) && error.message.includes(`${path}:2`),
    );
  });

  test('the tokenizer counts whitespace-separated words', () => {
    assert.equal(countTokens(''), 0);
    assert.equal(countTokens('  one two\nthree\t four '), 4);
  });
});

describe('batch scheduler', () => {
  test('runs up to capacity, queues the rest first-in first-out, and drops cancelled waiters', async () => {
    const scheduler = new BatchScheduler(1);
    const never = new AbortController().signal;
    assert.equal(await scheduler.acquire(never), true);
    const order: string[] = [];
    const cancelled = new AbortController();
    const second = scheduler.acquire(never).then((granted) => order.push(`second:${granted}`));
    const third = scheduler.acquire(cancelled.signal).then((granted) => order.push(`third:${granted}`));
    const fourth = scheduler.acquire(never).then((granted) => order.push(`fourth:${granted}`));
    assert.equal(scheduler.queued, 3);
    cancelled.abort();
    await third;
    assert.equal(scheduler.queued, 2);
    scheduler.release();
    await second;
    assert.equal(scheduler.running, 1);
    scheduler.release();
    await fourth;
    scheduler.release();
    assert.deepEqual(order, ['third:false', 'second:true', 'fourth:true']);
    assert.equal(scheduler.running, 0);
  });
});

describe('metrics', () => {
  test('Prometheus text and stats lines report spec-decoding counters in vLLM format', () => {
    const metrics = new SimMetrics();
    const before = { ...metrics.counters(0, 0), at: 1000 };
    metrics.recordStep(4, 3);
    metrics.recordStep(4, 1);
    metrics.recordStep(0, 0);
    metrics.generationTokens = 6;
    const text = renderMetrics('m"1', metrics.counters(2, 1));
    assert.match(text, /^# TYPE vllm:spec_decode_num_drafts_total counter$/m);
    assert.match(text, /^vllm:spec_decode_num_drafts_total\{model_name="m\\"1"\} 2\.0$/m);
    assert.match(text, /^vllm:spec_decode_num_draft_tokens_total\{model_name="m\\"1"\} 8\.0$/m);
    assert.match(text, /^vllm:spec_decode_num_accepted_tokens_total\{model_name="m\\"1"\} 4\.0$/m);
    assert.match(text, /^vllm:num_requests_running\{model_name="m\\"1"\} 2\.0$/m);
    const lines = statsLines(before, { ...metrics.counters(2, 1), at: before.at + 2000 });
    assert.match(lines[0]!, /Avg generation throughput: 3\.0 tokens\/s, Running: 2 reqs, Waiting: 1 reqs/);
    assert.match(lines[1]!, /Draft acceptance rate: 50\.0%, Mean acceptance length: 3\.00/);
  });

  test('a multi-worker total sums every counter and gauge of its workers', () => {
    const one = new SimMetrics();
    one.recordStep(4, 3);
    one.generationTokens = 5;
    const two = new SimMetrics();
    two.recordStep(4, 1);
    two.generationTokens = 2;
    two.recordFinished(2, 1);
    const total = sumCounters([one.counters(2, 0), two.counters(1, 3)]);
    assert.deepEqual(total, {
      promptTokens: 0,
      generationTokens: 7,
      requestsFinished: 1,
      finishedCompletionTokens: 2,
      finishedVerifySteps: 1,
      specDrafts: 2,
      specDraftTokens: 8,
      specAcceptedTokens: 4,
      specAcceptedPerPosition: [2, 1, 1, 0],
      running: 3,
      waiting: 3,
    });
  });
});
