import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { workNotes } from '../src/experiment/analysis/work-notes.js';
import type { TrialMetrics, TrialRecord } from '../src/store/types.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { faultServerSection } from './support-fault-server.js';
import { trialRecord } from './support-trial-record.js';

function trial(variant: string, metrics: Partial<TrialMetrics>): TrialRecord {
  return trialRecord(variant, 'c=4', metrics);
}

test('work notes name unequal work, disagreeing token counts, resends and a server behind its rate, per variant', () => {
  const short = { outputLength: { requestedMean: 40, generatedMean: 16, shortRequests: 40 } };
  const notes = workNotes([
    trial('baseline', {}),
    trial('baseline', {}),
    trial('fast', short),
    trial('fast', short),
    trial('fast', { tokenCounts: { method: 'stream-chunks', checked: 40, disagreeing: 40 }, resends: 3 }),
    trial('open', { rate: { offeredPerSecond: 20, servedPerSecond: 5.85, queuedByCap: 50, maxLagMs: 4000 } }),
  ]);
  assert.deepEqual(notes, [
    'fast c=4: early-stop: 16.0 of 40.0 tokens per request in 2 of 3 trials (80 requests stopped short; unequal work)',
    'fast c=4: token counts disagreed in 40 requests over 1 of 3 trials; figures use stream-chunks',
    'fast c=4: 3 requests resent after a kept-alive connection closed, over 3 trials',
    'open c=4: the server completed 5.85 req/s of the 20.0 offered: it is saturated, and latencies (counted from each scheduled arrival) grow with the length of the run (1 of 1 trials)',
  ]);
  assert.deepEqual(workNotes([trial('baseline', { tokenCounts: { method: 'server-usage', checked: 40, disagreeing: 0 } })]), []);
});

test('servelab run: a variant that stops short (accepted) and one whose usage lies (stream trusted) are named in show and the report', {
  timeout: 120_000,
}, async (t) => {
  const dir = tempDir(t, 'work-notes');
  const store = join(dir, 'servelab.db');
  const file = writeExperiment(dir, 'notes.yaml', {
    name: 'work-notes',
    profile: 'openai',
    trials: 1,
    server: faultServerSection(['--tpot-ms', '2']),
    client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 20, seed: 3 }, warmupRequests: 1 },
    workloads: [{ kind: 'single-stream', requests: 4 }],
    variants: {
      baseline: {},
      short: { args: ['--output-share', '0.4'], client: { requireFullOutput: false } },
      lying: { args: ['--usage-factor', '2'], client: { tokenCounts: 'stream' } },
    },
  });
  const run = await cli(['run', file], { store });
  assert.equal(run.code, 0, run.stderr);
  const show = await cli(['show', '1'], { store });
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /short single-stream: early-stop: 8\.00 of 20\.0 tokens per request in 1 of 1 trials \(4 requests stopped short; unequal work\)/);
  assert.match(show.stdout, /lying single-stream: token counts disagreed in 4 requests over 1 of 1 trials; figures use stream-chunks/);
  assert.doesNotMatch(show.stdout, /^ {2}baseline single-stream: /m);
  assert.match(show.stdout, /output-token counts from: .*stream-chunks/);
  const report = await cli(['report', '1', '--out', join(dir, 'report'), '--json'], { store });
  assert.equal(report.code, 0, report.stderr);
  const written = JSON.stringify(JSON.parse(report.stdout));
  const htmlPath = /"([^"]+\.html)"/.exec(written)?.[1];
  assert.ok(htmlPath, written);
  const html = readFileSync(htmlPath, 'utf8');
  assert.match(html, /short single-stream: early-stop: 8\.00 of 20\.0 tokens per request/);
});

test('servelab run: a rate trial whose server fell behind says so beside its figure, in show too', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t, 'work-notes-rate');
  const store = join(dir, 'servelab.db');
  const file = writeExperiment(dir, 'rate.yaml', {
    name: 'behind',
    trials: 1,
    // One request at a time, ~125 ms each: 8 req/s at most against 20 scheduled.
    server: { command: simCommand({ tpotMs: 5, extra: ['--max-batch', '1'] }), readyTimeout: '5m' },
    workloads: [{ kind: 'rate', requestsPerSecond: 20, arrival: 'constant', requests: 20 }],
  });
  const run = await cli(['run', file], { store });
  assert.equal(run.code, 0, run.stderr);
  assert.match(
    run.stderr,
    /trial 1\/1 baseline rate=20\/s: [\d.]+ tok\/s \(20 ok, 0 failed\); WARNING: the server completed [\d.]+ req\/s of the 20\.0 scheduled: it is saturated/,
  );
  const show = await cli(['show', '1'], { store });
  assert.match(show.stdout, /baseline rate=20\/s: the server completed [\d.]+ req\/s of the 20\.0 offered: it is saturated.*\(1 of 1 trials\)/);
});
