import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { runWallMs, trialsOf, twins } from './support-lanes.js';

describe('lanes: wall time', () => {
  test('two lanes measure the same trials in clearly less wall time than one', async (t) => {
    const dir = tempDir(t, 'lanes-wall');
    const store = join(dir, 'servelab.db');
    // Trials (~1.3 s: 4 requests x 32 tokens x 10 ms) longer than a start here, as trials of minutes are on a GPU box.
    const common = {
      server: { command: simCommand({ tpotMs: 10 }), readyTimeout: '5m' },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 32, seed: 3 }, warmupRequests: 1 },
      workloads: [{ kind: 'single-stream', requests: 4 }],
      variants: twins,
      trials: 4,
    };
    const one = writeExperiment(dir, 'one.yaml', { ...common, name: 'lanes-one' });
    const two = writeExperiment(dir, 'two.yaml', { ...common, name: 'lanes-two', lanes: [{ env: { LANE: '0' } }, { env: { LANE: '1' } }] });
    const first = await cli(['run', one], { store, timeoutMs: 180_000 });
    assert.equal(first.code, 0, first.stderr);
    const second = await cli(['run', two], { store, timeoutMs: 180_000 });
    assert.equal(second.code, 0, second.stderr);
    assert.equal(trialsOf(store, 1).length, 8);
    assert.equal(trialsOf(store, 2).length, 8);
    const [oneMs, twoMs] = [runWallMs(store, 1), runWallMs(store, 2)];
    t.diagnostic(`8 trials: one lane ${oneMs} ms, two lanes ${twoMs} ms (${(twoMs / oneMs).toFixed(2)}x)`);
    assert.ok(twoMs < 0.8 * oneMs, `two lanes ${twoMs} ms vs one lane ${oneMs} ms`);
  });
});
