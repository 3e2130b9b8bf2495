/**
 * `servelab run` against fault servers whose token events are not one token each (support-fault-server.ts): the
 * count a trial's figures use, end to end through the runner, the store and `show`.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { cli, tempDir, writeExperiment } from './support-experiment.js';
import { faultServerSection } from './support-fault-server.js';

const CLIENT = { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 20, seed: 3 }, warmupRequests: 1 };

test('a variant streaming each word as two token events (usage agrees) is over-length, not faster', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t, 'over-length');
  const store = join(dir, 'servelab.db');
  const file = writeExperiment(dir, 'over-length.yaml', {
    name: 'over-length',
    profile: 'openai',
    trials: 2,
    trialRetries: 0,
    server: faultServerSection(['--tpot-ms', '2']),
    client: CLIENT,
    workloads: [{ kind: 'single-stream', requests: 4 }],
    variants: { baseline: {}, split: { args: ['--events-per-word', '2'] } },
  });
  const run = await cli(['run', file], { store });
  assert.notEqual(run.code, 0, run.stdout);
  assert.match(
    run.stderr,
    /split single-stream .*was invalid 1 times; last: over-length: 40\.0 of 20\.0 tokens per request \(4 requests over their max_tokens, counted by server-usage\)/,
  );
  assert.doesNotMatch(`${run.stdout}${run.stderr}`, /faster|\+9\d\.\d%/);
});

test('a variant streaming three tokens per event with honest usage and no speculative counters runs valid, its counting noted', {
  timeout: 120_000,
}, async (t) => {
  const dir = tempDir(t, 'several-per-event');
  const store = join(dir, 'servelab.db');
  const file = writeExperiment(dir, 'several.yaml', {
    name: 'several-per-event',
    profile: 'openai',
    trials: 1,
    trialRetries: 0,
    server: faultServerSection(['--tpot-ms', '2']),
    client: CLIENT,
    workloads: [{ kind: 'single-stream', requests: 4 }],
    variants: { baseline: {}, batched: { args: ['--words-per-event', '3'] } },
  });
  const run = await cli(['run', file], { store });
  assert.equal(run.code, 0, run.stderr);
  const show = await cli(['show', '1'], { store });
  assert.equal(show.code, 0, show.stderr);
  assert.match(
    show.stdout,
    /batched single-stream: token events carried several tokens \(2\.86 per event\) in 4 requests over 1 of 1 trials; figures count server-usage; ITL is the gap between events, TPOT per token/,
  );
  assert.doesNotMatch(show.stdout, /baseline single-stream: token events|disagree|invalid trials? [1-9]/);
});
