/**
 * `servelab bench --capacity` against real simulators in their own processes: time per token grows with the requests
 * in the batch (src/simulate/model.ts batchFactor), so a TPOT p99 limit has a capacity the model predicts, and a
 * simulator that slows down less under load has a higher one.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { type TestContext, test } from 'node:test';
import type { BenchResult } from '../src/load/types.js';
import type { SimConfig } from '../src/simulate/config.js';
import { expectedTpotMs } from '../src/simulate/model.js';
import { SERVELAB, servingSimulator } from './support-experiment.js';

// Long steps (50 ms) and a wide margin below the limit keep a stall of this loaded machine's processes (tens of ms,
// spread over the request's tokens) from failing a step the model passes.
const TPOT_MS = 50;
const SLO_TPOT_MS = 77.5;

function bench(t: TestContext, url: string): Promise<{ code: number | null; result: BenchResult; stderr: string }> {
  const args = ['bench', url, '--capacity', 'concurrency:1..32', '--capacity-slo', `tpot-p99=${SLO_TPOT_MS}ms`, '--steps', '5'];
  const child = spawn(process.execPath, [SERVELAB, ...args, '--requests', '32', '--input-len', '16', '--output-len', '12', '--json', '--no-progress']);
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, result: JSON.parse(stdout) as BenchResult, stderr });
    }),
  );
}

/** The largest concurrency whose modelled time per token is within the SLO: the capacity a noiseless client finds. */
function modelCapacity(config: SimConfig): number {
  let capacity = 0;
  while (expectedTpotMs(config, capacity + 1) <= SLO_TPOT_MS) capacity++;
  return capacity;
}

async function capacityOf(t: TestContext, slowdown: string) {
  const url = await servingSimulator(t, ['--tpot-ms', String(TPOT_MS), '--ttft-ms', '5', '--concurrency-slowdown', slowdown, '--jitter', '0.02']);
  const config = (await (await fetch(`${url}/sim/config`)).json()) as SimConfig;
  const { code, result, stderr } = await bench(t, url);
  assert.equal(code, 0, stderr);
  const standing = result.levels.filter((level) => level.capacity);
  assert.equal(standing.length, 1, 'one level stands for the search');
  return { search: standing[0]!.capacity!, levels: result.levels, model: modelCapacity(config) };
}

test('bench --capacity finds the modelled capacity, and a simulator that slows less under load has a higher one', async (t) => {
  const slow = await capacityOf(t, '0.1');
  const fast = await capacityOf(t, '0.02');
  for (const { search, levels, model } of [slow, fast]) {
    // A loaded machine only adds time per token (timers fire late), so the capacity found is at most the model's (one
    // more where the jitter of a level next to the limit falls below it).
    assert.ok(search.value <= model + 1 && search.value >= model / 2, `capacity ${search.value}, model ${model}: ${JSON.stringify(search.steps)}`);
    assert.ok(search.steps.length <= 6 && search.steps.length === levels.length, 'steps + 1 levels at most, each kept');
    assert.ok(search.upper !== undefined && search.upper > search.value, 'a failing level above the capacity bounds it');
    t.diagnostic(`capacity ${search.value} (model ${model}): ${search.steps.map((step) => `${step.label} ${step.passed ? 'met' : 'missed'}`).join(', ')}`);
  }
  assert.ok(fast.search.value > slow.search.value, `fast ${fast.search.value} vs slow ${slow.search.value}`);
});
