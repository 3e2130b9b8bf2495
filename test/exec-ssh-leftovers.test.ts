/**
 * What a killed runner leaves on an SSH host (the CI sshd on 127.0.0.1, ci/start-sshd.sh): the next runner of the run
 * stops it before starting anything there. Apart from exec-ssh-run.test.ts so that each file stays well inside the
 * per-file test timeout on 2 cores.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { listRuns, listTrials } from '../src/store/queries.js';
import { runServers } from '../src/store/reads.js';
import { processAlive } from '../src/util/proc-identity.js';
import { cli } from './support-experiment.js';
import { ciSshd, needs } from './support-services.js';
import { processesWith, startSshRun } from './support-ssh.js';

const ci = ciSshd();

describe('leftovers on an SSH host', { ...needs(ci.skip), timeout: 300_000 }, () => {
  test('the runner killed with SIGKILL mid-trial: its resume stops the server it left on the host before starting one', async (t) => {
    const run = await startSshRun(t, 'ssh-runner-kill9', 1);
    await run.trialInFlight();
    const leftovers = processesWith(run.model);
    assert.ok(leftovers.length > 0);
    run.killRunner();
    await run.exited;
    // Detached from the runner's session: only its watchdog would stop it, after 15 minutes without a poll.
    assert.ok(
      leftovers.some((pid) => processAlive(pid)),
      'the server outlived its runner',
    );

    const runId = listRuns(run.db)[0]!.id;
    const resumed = await cli(['run', '--resume', String(runId), '--json'], { store: run.store, timeoutMs: 180_000 });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, /stopped \S+-server-\S+, left running by an earlier runner of this run that was killed/);
    assert.ok(
      leftovers.every((pid) => !processAlive(pid)),
      'the leftover server was stopped',
    );
    assert.equal(JSON.parse(resumed.stdout).status, 'done', resumed.stdout);
    assert.equal(listTrials(run.db, runId).length, 1);
    assert.deepEqual(processesWith(run.model), []);
    // The killed runner's server row says what happened to it; no view shows it as still ready.
    const [left, ...after] = runServers(run.db, runId);
    assert.equal(left?.status, 'stopped');
    assert.match(left?.message ?? '', /^its runner was gone; stopped on resume \(\S+-server-\S+ on root@127\.0\.0\.1\)$/);
    assert.ok(after.length > 0 && after.every((server) => server.status === 'stopped'), JSON.stringify(after));
  });
});
