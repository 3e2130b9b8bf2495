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
    // Two differences, one per half: neither half matters alone, both together do (one round; the larger cases, a
    // subset tested without each member, are in test/bisect-search.test.ts).
    const env = { NCCL_ALGO: 'Ring', NCCL_PROTO: 'LL' };
    const { tuned, untuned } = bisectExperiments(dir, 'bisect-pair', ['NCCL_ALGO=Ring,NCCL_PROTO=LL:2'], env);
    assert.equal((await cli(['run', tuned], { store })).code, 0);
    assert.equal((await cli(['run', untuned, '--accept-env-change'], { store })).code, 0);
    const done = await cli(['bisect', '2', '--trials', '6', '--tolerance', '5%'], { store, timeoutMs: 480_000 });
    assert.equal(done.code, 0, done.stderr);
    assert.doesNotMatch(done.stderr, /measured nothing/, 'run 2 measured: its fingerprint is the current configuration');
    assert.match(done.stdout, /NCCL_ALGO \+ NCCL_PROTO: only together \+(7\d|8\d|9\d|1\d\d)\.\d% \(CI [^)]+\); apart: /);
    assert.doesNotMatch(done.stdout, /^ {2}NCCL_(ALGO|PROTO) +[+−]\d/m, 'neither is responsible alone');
    assert.match(done.stdout, /together (9\d|1\d\d)% of the \+(7\d|8\d|9\d|1\d\d)\.\d%/);
    assert.match(done.stdout, /export NCCL_ALGO=Ring\n {2}export NCCL_PROTO=LL/);
  });
});
