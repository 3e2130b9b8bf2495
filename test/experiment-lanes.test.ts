import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { lanesOfBlocks, trialsOf, twins } from './support-lanes.js';

describe('lanes', () => {
  test('identical variants on a lane 15% faster: no significant difference, and the lane report names the fast lane with its env', async (t) => {
    const dir = tempDir(t, 'lanes-speed');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'lanes.yaml', {
      name: 'lanes-speed',
      // Request time, mostly decode (16 steps of 30 ms): what --env-speedup changes. Not tpot: on a starved box the client
      // can read a request's tokens in one burst (a tpot near 0), while its end-to-end time stays right; the median of 8
      // requests a trial keeps a stalled one from moving the trial's figure.
      metric: 'e2eMedianMs',
      server: { command: simCommand({ tpotMs: 30, extra: ['--env-speedup', 'LANE=1:1.15'] }), readyTimeout: '5m' },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 16, seed: 3 }, warmupRequests: 1 },
      fingerprint: { envPatterns: ['LANE'] },
      lanes: [{ env: { LANE: '0' } }, { env: { LANE: '1' } }],
      variants: twins,
      workloads: [{ kind: 'single-stream', requests: 8 }],
      trials: 8,
    });
    const run = await cli(['run', file], { store, timeoutMs: 180_000 });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /twin\s.*no significant difference/);
    assert.match(run.stdout, /lanes \(trials measured\): lane1 \d+, lane2 \d+; verdicts compare configs within each lane/);
    assert.match(run.stdout, /lane2 is −\d+\.\d% \(faster\) vs the other lanes at the same configs \(single-stream: CI .*, p = .*\); fingerprint: LANE 0 → 1/);
    assert.match(run.stdout, /lane1 is \+\d+\.\d% \(slower\)/);
    // Both lanes ran at once: their log lines carry their names.
    assert.match(run.stderr, /\[lane1\] starting server/);
    assert.match(run.stderr, /\[lane2\] starting server/);

    const trials = trialsOf(store, 1);
    assert.equal(trials.length, 16);
    assert.equal(new Set(trials.map((trial) => `${trial.variant} ${trial.block}`)).size, 16, 'no trial measured twice');
    for (const [block, lanes] of lanesOfBlocks(trials)) assert.equal(lanes.size, 1, `block ${block + 1} ran on one lane`);
    assert.deepEqual(new Set(trials.map((trial) => trial.lane)), new Set([0, 1]));

    const shown = await cli(['show', '1'], { store });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /lane2 is −\d+\.\d% \(faster\)/);
  });
});
