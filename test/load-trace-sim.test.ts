/**
 * Trace replay on real processes: `servelab bench --trace` against a spawned `servelab simulate` with a prefix cache.
 * What is checked is the schedule the client kept (each request's scheduled arrival, its send less its queueing,
 * against the trace's times divided by the speedup) and the prefix-cache hits the shared hash blocks earn; how late
 * the sends were on this machine is reported (t.diagnostic), not asserted: it measures the load of the machine.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readTrace } from '../src/load/trace/parse.js';
import { TRACE_BLOCK_TOKENS, windowed } from '../src/load/trace/prompts.js';
import type { TraceFormat, TraceRecord } from '../src/load/trace/types.js';
import type { BenchResult, RequestSample } from '../src/load/types.js';
import { summarize } from '../src/metrics/summary.js';
import { openStore } from '../src/store/db.js';
import { cli, SERVELAB, servingSimulator, simCommand, tempDir, writeExperiment } from './support-experiment.js';

const SAMPLES = fileURLToPath(new URL('../../examples/traces/', import.meta.url));

/**
 * Scheduled arrivals are sends less queueing: a whole-ms Date.now() against a monotonic lateness, so within ~2 ms
 * (more when the thread is descheduled between the two clock reads); a speedup not applied or a window misplaced
 * is off by hundreds of ms.
 */
const SCHEDULE_TOLERANCE_MS = 25;

function bench(args: string[], timeoutMs = 90_000): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [SERVELAB, 'bench', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    }),
  );
}

/** Replays `file` and returns its one level, after checking the run succeeded. */
async function replay(url: string, dir: string, file: string, format: TraceFormat, extra: string[]): Promise<BenchResult['levels'][number]> {
  const out = join(dir, `${format}-${extra.join('_').replace(/[^\w.-]/g, '')}.json`);
  const run = await bench([url, '--trace', join(SAMPLES, file), '--trace-format', format, '--no-progress', '--out', out, ...extra]);
  assert.equal(run.code, 0, run.stderr);
  const result = JSON.parse(readFileSync(out, 'utf8')) as BenchResult;
  assert.equal(result.levels.length, 1);
  assert.equal(result.levels[0]!.label, 'trace');
  return result.levels[0]!;
}

/** Each sample's scheduled arrival from the level's first one, against the records' times from the first, scaled. */
function scheduleErrors(samples: readonly RequestSample[], records: readonly TraceRecord[], speedup: number): number[] {
  const scheduled = samples.map((sample) => sample.sentAtMs - (sample.queueMs ?? 0));
  return samples.map((sample, index) => scheduled[index]! - scheduled[0]! - (records[sample.index]!.timestampMs - records[0]!.timestampMs) / speedup);
}

/** Prompt tokens a block-hash prefix cache finds: each request's leading blocks whose whole chain an earlier one had. */
function expectedHitRate(records: readonly TraceRecord[]): number {
  const seen = new Set<string>();
  let hits = 0;
  let prompt = 0;
  for (const record of records) {
    const ids = record.hashIds ?? [];
    let matched = 0;
    while (matched < ids.length && (matched + 1) * TRACE_BLOCK_TOKENS <= record.inputTokens && seen.has(ids.slice(0, matched + 1).join(','))) matched++;
    for (let blocks = 1; blocks <= ids.length; blocks++) seen.add(ids.slice(0, blocks).join(','));
    hits += Math.min(record.inputTokens - 1, matched * TRACE_BLOCK_TOKENS);
    prompt += record.inputTokens;
  }
  return hits / prompt;
}

function report(t: { diagnostic(message: string): void }, name: string, level: BenchResult['levels'][number], errors: number[]): void {
  const lags = level.samples.map((sample) => sample.queueMs ?? 0);
  t.diagnostic(
    `${name}: ${level.samples.length} requests; schedule vs trace max |error| ${Math.max(...errors.map(Math.abs)).toFixed(2)} ms; ` +
      `send lag behind schedule p50 ${summarize(lags).median.toFixed(2)} ms, max ${Math.max(...lags).toFixed(2)} ms; ` +
      `offered ${level.rate?.offeredPerSecond.toFixed(2)} req/s, sent ${level.rate?.sentPerSecond.toFixed(2)}, served ${level.rate?.servedPerSecond.toFixed(2)}` +
      (level.prefixCache ? `; prefix-cache hit rate ${(level.prefixCache.hitRate * 100).toFixed(1)}%` : ''),
  );
}

describe('trace replay against the simulator', () => {
  test('Mooncake at speedup 4: arrivals on the trace’s times, shared hash blocks hit the prefix cache; a window replays its stretch', async (t) => {
    const dir = tempDir(t, 'trace-sim');
    const url = await servingSimulator(t, ['--ttft-ms', '5', '--tpot-ms', '1', '--jitter', '0', '--prefix-cache']);
    const records = windowed(readTrace(join(SAMPLES, 'mooncake-sample.jsonl'), 'mooncake'), undefined);

    const level = await replay(url, dir, 'mooncake-sample.jsonl', 'mooncake', ['--trace-speedup', '4']);
    assert.equal(level.completed, records.length);
    const errors = scheduleErrors(level.samples, records, 4);
    report(t, 'mooncake x4', level, errors);
    for (const error of errors) assert.ok(Math.abs(error) < SCHEDULE_TOLERANCE_MS, `scheduled arrival off the trace by ${error} ms`);
    assert.deepEqual(
      level.samples.map((sample) => [sample.inputTokens, sample.requestedTokens]),
      records.map((record) => [record.inputTokens, record.outputTokens]),
    );
    // Offered: the trace's own rate over the replayed span.
    const span = (records.at(-1)!.timestampMs - records[0]!.timestampMs) / 4;
    assert.ok(Math.abs(level.rate!.offeredPerSecond - ((records.length - 1) * 1000) / span) < 1e-9);
    // The simulator caches by 64-character blocks and converts characters to tokens, hence the tolerance.
    const expected = expectedHitRate(records);
    assert.ok(expected > 0.4, `sample trace shares too little (${expected})`);
    assert.ok(Math.abs(level.prefixCache!.hitRate - expected) < 0.03, `hit rate ${level.prefixCache!.hitRate} vs ${expected} from the trace`);
    // The trace's designed rate travels with the prompts (targetCachedTokens), shown beside the achieved one.
    assert.ok(Math.abs(level.prefixCache!.targetHitRate! - expected) < 0.01, `designed ${level.prefixCache!.targetHitRate} vs ${expected}`);
    // The warm-up (salted) left none of the trace's blocks behind.
    assert.equal(level.prefixCache!.firstRequestHitRate, 0);

    // Another salt: a cold cache again, so the window's hits are its own.
    const windowArgs = ['--trace-speedup', '4', '--trace-window', '2s,5s', '--warmup', '0', '--prompt-salt', '1'];
    const windowLevel = await replay(url, dir, 'mooncake-sample.jsonl', 'mooncake', windowArgs);
    const inWindow = windowed(records, { startMs: 2000, endMs: 5000 });
    assert.ok(inWindow.length > 2 && inWindow.length < records.length);
    assert.equal(windowLevel.completed, inWindow.length);
    const windowErrors = scheduleErrors(windowLevel.samples, inWindow, 4);
    report(t, 'mooncake x4 window 2s-5s', windowLevel, windowErrors);
    for (const error of windowErrors) assert.ok(Math.abs(error) < SCHEDULE_TOLERANCE_MS, `windowed arrival off by ${error} ms`);
    assert.ok(Math.abs(windowLevel.prefixCache!.hitRate - expectedHitRate(inWindow)) < 0.03, `window hit rate ${windowLevel.prefixCache!.hitRate}`);

    // The trace's lengths under a closed loop: its warm-up is salted too (unsalted, it cached the measured blocks: 60% vs 52%).
    const closedOut = join(dir, 'closed-loop.json');
    const closedArgs = ['--trace', join(SAMPLES, 'mooncake-sample.jsonl'), '--concurrency', '1', '--requests', String(records.length), '--warmup', '2'];
    const closed = await bench([url, ...closedArgs, '--no-warmup-per-level', '--prompt-salt', '2', '--no-progress', '--out', closedOut]);
    assert.equal(closed.code, 0, closed.stderr);
    const closedLevel = (JSON.parse(readFileSync(closedOut, 'utf8')) as BenchResult).levels[0]!;
    assert.equal(closedLevel.prefixCache!.firstRequestHitRate, 0);
    assert.ok(Math.abs(closedLevel.prefixCache!.hitRate - expected) < 0.03, `closed-loop hit rate ${closedLevel.prefixCache!.hitRate} vs ${expected}`);
  });

  test('BurstGPT and Azure CSV traces replay on their times (Azure from two workers); a failed BurstGPT request asks for one token', async (t) => {
    const dir = tempDir(t, 'trace-sim-csv');
    const url = await servingSimulator(t, ['--ttft-ms', '5', '--tpot-ms', '1', '--jitter', '0']);
    const burst = readTrace(join(SAMPLES, 'burstgpt-sample.csv'), 'burstgpt');
    const burstLevel = await replay(url, dir, 'burstgpt-sample.csv', 'burstgpt', ['--trace-speedup', '10']);
    assert.equal(burstLevel.completed, burst.length);
    const sorted = windowed(burst, undefined);
    const burstErrors = scheduleErrors(burstLevel.samples, sorted, 10);
    report(t, 'burstgpt x10', burstLevel, burstErrors);
    for (const error of burstErrors) assert.ok(Math.abs(error) < SCHEDULE_TOLERANCE_MS, `burstgpt arrival off by ${error} ms`);
    assert.equal(burstLevel.samples[sorted.findIndex((record) => record.outputTokens === 0)]!.requestedTokens, 1);

    const azure = windowed(readTrace(join(SAMPLES, 'azure-sample.csv'), 'azure'), undefined);
    // Sent from two load workers: the trace's arrivals are dealt to them on one shared clock.
    const azureLevel = await replay(url, dir, 'azure-sample.csv', 'azure', ['--trace-speedup', '10', '--requests', '20', '--workers', '2']);
    assert.equal(azureLevel.completed, 20);
    const azureErrors = scheduleErrors(azureLevel.samples, azure, 10);
    report(t, 'azure x10 (first 20, 2 workers)', azureLevel, azureErrors);
    for (const error of azureErrors) assert.ok(Math.abs(error) < SCHEDULE_TOLERANCE_MS, `azure arrival off by ${error} ms`);
  });

  test('servelab run: a trace workload in an experiment file (the trace its own), cold cache per trial, the trace’s own hits kept', async (t) => {
    const dir = tempDir(t, 'trace-run');
    const store = join(dir, 'servelab.db');
    copyFileSync(join(SAMPLES, 'mooncake-sample.jsonl'), join(dir, 'trace.jsonl'));
    const file = writeExperiment(dir, 'trace.yaml', {
      name: 'trace-replay',
      server: { command: simCommand({ tpotMs: 1, extra: ['--prefix-cache', '--jitter', '0'] }), readyTimeout: '5m' },
      client: { cache: 'cold' },
      workloads: [{ kind: 'trace', trace: { path: 'trace.jsonl', format: 'mooncake', speedup: 8, window: { start: 0, end: '4s' } }, maxInFlight: 32 }],
      trials: 2,
    });
    const result = await cli(['run', file], { store, timeoutMs: 150_000 });
    assert.equal(result.code, 0, result.stderr);
    const db = openStore(store, { readonly: true });
    t.after(() => db.close());
    // Valid trials only: an invalid one is kept in invalid_trials.
    const rows = db.prepare('SELECT workload, metrics_json FROM trials ORDER BY id').all() as Array<{ workload: string; metrics_json: string }>;
    const records = windowed(readTrace(join(dir, 'trace.jsonl'), 'mooncake'), { startMs: 0, endMs: 4000 });
    assert.equal(rows.length, 2);
    for (const row of rows) {
      const metrics = JSON.parse(row.metrics_json) as { completed: number; prefixCacheHitRate?: number };
      assert.deepEqual([row.workload, metrics.completed], ['trace', records.length]);
      // Each trial's salt makes its cache cold; the hits the trace's shared blocks earn are its own (salt words shift the text, hence the tolerance).
      assert.ok(Math.abs(metrics.prefixCacheHitRate! - expectedHitRate(records)) < 0.03, `trial hit rate ${metrics.prefixCacheHitRate}`);
    }
  });
});
