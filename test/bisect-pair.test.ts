import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { bisectExperiments } from './support-bisect.js';
import { cli, tempDir } from './support-experiment.js';

/** `servelab bisect` when two settings pay only together (the simulator's joint --env-speedup), on real runs. */
describe('servelab bisect, a pair', () => {
  test('two that matter only together: named as a pair with the effect of both and of each apart', async (t) => {
    const dir = tempDir(t, 'bisect-pair');
    const store = join(dir, 'servelab.db');
    // Two differences: the full factorial of four configurations tells the pair's interaction from each alone in one
    // round (the larger designs, whose pairs are aliased, are in test/bisect-search.test.ts).
    const env = { NCCL_ALGO: 'Ring', NCCL_PROTO: 'LL' };
    const { tuned, untuned } = bisectExperiments(dir, 'bisect-pair', ['NCCL_ALGO=Ring,NCCL_PROTO=LL:2'], env);
    assert.equal((await cli(['run', tuned], { store })).code, 0);
    assert.equal((await cli(['run', untuned, '--accept-env-change'], { store })).code, 0);
    const done = await cli(['bisect', '2', '--trials', '6', '--tolerance', '5%'], { store, timeoutMs: 480_000 });
    assert.equal(done.code, 0, done.stderr);
    assert.doesNotMatch(done.stderr, /measured nothing/, 'run 2 measured: its fingerprint is the current configuration');
    assert.match(
      done.stdout,
      /NCCL_ALGO \+ NCCL_PROTO: together \+(7\d|8\d|9\d|1\d\d)\.\d% \(CI [^)]+\), of which only together \+\d+\.\d% \(CI [^)]+\); apart: NCCL_ALGO [+−]\d+\.\d% \(CI [^)]+\), NCCL_PROTO [+−]\d+\.\d% /,
    );
    assert.doesNotMatch(done.stdout, /^ {2}NCCL_(ALGO|PROTO) +[+−]\d/m, 'neither is responsible alone');
    assert.match(done.stdout, /share explained \(the named effects over the total, log scale\): 100% \(CI [^)]+\) of the \+(7\d|8\d|9\d|1\d\d)\.\d%/);
    // Four configurations × 3 trials (each effect as precise as 6 per arm one at a time) vs 4 × 6 one at a time.
    assert.match(done.stdout, /cost: 12 trials, /);
    assert.match(done.stdout, /6 trials per arm: 24 trials, [\d.]+ GPU-hours \(12 fewer here\)/);
    assert.match(done.stdout, /export NCCL_ALGO=Ring\n {2}export NCCL_PROTO=LL/);
  });
});
