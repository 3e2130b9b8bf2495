import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { assertLaneTwoLeft, twins } from './support-lanes.js';

describe('lanes: a dying lane', () => {
  test('a lane that dies mid-run: its unmeasured trials run on the other lane, nothing lost or measured twice', async (t) => {
    const dir = tempDir(t, 'lanes-die');
    const store = join(dir, 'servelab.db');
    // Lane 2's machine "fails" at its second server start: the wrapper counts starts per lane in a file.
    const script = [
      `n=$(cat ${dir}/starts-$LANE 2>/dev/null || echo 0); echo $((n+1)) > ${dir}/starts-$LANE`,
      'if [ "$LANE" = 1 ] && [ "$n" -ge 1 ]; then echo "RuntimeError: CUDA error: an illegal memory access was encountered" >&2; exit 1; fi',
      `exec ${simCommand().join(' ')}`,
    ].join('\n');
    const file = writeExperiment(dir, 'lanes.yaml', {
      name: 'lanes-die',
      server: { command: ['sh', '-c', script], readyTimeout: '5m' },
      lanes: [{ env: { LANE: '0' } }, { env: { LANE: '1' } }],
      variants: twins,
      trials: 4,
    });
    const run = await cli(['run', file], { store, timeoutMs: 180_000 });
    assert.equal(run.code, 0, run.stderr);
    assertLaneTwoLeft(run, store);
  });
});
