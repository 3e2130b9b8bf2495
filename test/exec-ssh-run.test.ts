/**
 * `servelab run` with an SSH executor against a real OpenSSH server on 127.0.0.1 (ci/start-sshd.sh): dropped
 * connections and killed servers during loading and during trials. Apart from exec-ssh.test.ts so that each file
 * stays well inside the per-file test timeout on 2 cores.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { openStore } from '../src/store/db.js';
import { listInvalidTrials, listRuns, listTrials } from '../src/store/queries.js';
import { processAlive } from '../src/util/proc-identity.js';
import { writeExperiment } from './support-experiment.js';
import { ciSshd, needs } from './support-services.js';
import { BIN, killSshdSessions, processesWith, sshRunSetup, startSshRun } from './support-ssh.js';

const ci = ciSshd();

describe('servelab run with an ssh executor against a real sshd', { timeout: 300_000 }, () => {
  test('connections dropped while the server loads: the experiment still succeeds and leaves no server behind', needs(ci.skip), async (t) => {
    const { dir, model, command, executor } = sshRunSetup(t, { loadMs: 5000, tpotMs: 1 });
    const experiment = writeExperiment(dir, 'exp.yaml', {
      name: 'ssh-drop',
      server: { command, readyTimeout: '120s' },
      executor,
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 8, seed: 1 }, warmupRequests: 1 },
      trials: 2,
      variants: { base: {} },
    });
    const child = spawn(process.execPath, [BIN, 'run', experiment, '--store', join(dir, 'store.db'), '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => child.kill('SIGKILL'));
    let stderr = '';
    let stdout = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    let exitCode: number | null | undefined;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve((exitCode = code))));

    // Once the server runs on the "host" (and is still loading), cut every SSH connection, twice.
    const deadline = Date.now() + 60_000;
    while (processesWith(model).length === 0 && exitCode === undefined && Date.now() < deadline) await delay(100);
    assert.ok(processesWith(model).length > 0, `server never started:\n${stderr}`);
    const serverPids = processesWith(model);
    assert.ok(killSshdSessions() > 0);
    await delay(1500);
    killSshdSessions();

    assert.equal(await exited, 0, stderr);
    assert.match(stderr, /lost; reconnecting/);
    assert.equal(JSON.parse(stdout).status, 'done', stdout);
    const db = openStore(join(dir, 'store.db'), { readonly: true });
    t.after(() => db.close());
    const run = listRuns(db)[0]!;
    assert.equal(listTrials(db, run.id).length, 2);
    assert.ok(
      serverPids.every((pid) => !processAlive(pid)),
      'the server that survived the drops was stopped at the end',
    );
    assert.deepEqual(processesWith(model), []);
  });
});

describe('trial validity over a real sshd', { ...needs(ci.skip), timeout: 300_000 }, () => {
  test('the server killed with SIGKILL mid-trial: trial invalid, server restarted on the host, trial re-run', async (t) => {
    const run = await startSshRun(t, 'ssh-kill9', 2);
    await run.trialInFlight();
    const victims = processesWith(run.model);
    assert.ok(victims.length > 0);
    for (const pid of victims) process.kill(pid, 'SIGKILL');

    assert.equal(await run.exited, 0, run.stderr());
    assert.match(run.stderr(), /INVALID( \(\d+ ok, \d+ failed\))?: server .* during the trial/);
    assert.match(run.stderr(), /restarting it \(unplanned restart 1\)/);
    assert.equal(JSON.parse(run.stdout()).status, 'done', run.stdout());
    const runId = listRuns(run.db)[0]!.id;
    assert.equal(listTrials(run.db, runId).length, 2);
    assert.ok(listTrials(run.db, runId).every((trial) => trial.metrics.failed === 0));
    assert.equal(listInvalidTrials(run.db, runId).length, 1);
    assert.deepEqual(processesWith(run.model), []);
  });

  test('the SSH connection dropped mid-trial: trial invalid, re-run on the same server once the forward is back', async (t) => {
    const run = await startSshRun(t, 'ssh-drop-trial', 2);
    await run.trialInFlight();
    const serverPids = processesWith(run.model);
    assert.ok(killSshdSessions() > 0);

    assert.equal(await run.exited, 0, run.stderr());
    assert.match(run.stderr(), /lost; reconnecting/);
    assert.match(run.stderr(), /INVALID( \(\d+ ok, \d+ failed\))?: server .* during the trial/);
    assert.match(run.stderr(), /server is up and answering; measuring the trial again/);
    assert.doesNotMatch(run.stderr(), /restarting it/);
    const runId = listRuns(run.db)[0]!.id;
    const trials = listTrials(run.db, runId);
    assert.equal(trials.length, 2);
    assert.ok(
      trials.every((trial) => trial.metrics.failed === 0),
      'no request failed during the reconnect in a counted trial',
    );
    assert.ok(listInvalidTrials(run.db, runId).length >= 1);
    assert.ok(
      serverPids.every((pid) => !processAlive(pid)),
      'the server that survived the drop was stopped at the end',
    );
  });
});
