/**
 * The library API runs the experiment it is given (issue 32): `runExperiment({ db, experiment })` with a secret in
 * its server env needs neither the file the experiment came from (since removed or edited) nor a `workDir`; and no
 * throw leaves a run row `running`: every path ends `failed` with its cause. On the fake machine
 * (support-fake-executor.ts): the real runner, lease, journal and store.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { createRun } from '../src/experiment/run/run-store.js';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { type Db, openStore } from '../src/store/db.js';
import { getRun } from '../src/store/queries.js';
import { insertServer, updateServer } from '../src/store/runs.js';
import { messageOf } from '../src/util/errors.js';
import { tempDir, writeExperiment } from './support-experiment.js';
import { FakeExecutor } from './support-fake-executor.js';

const TOKEN = 'hf_library0secret0value0123456789';

function lab(t: TestContext): { dir: string; db: Db; file: (token?: string) => string } {
  const dir = tempDir(t, 'library');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  return {
    dir,
    db,
    file: (token = TOKEN) =>
      writeExperiment(dir, 'exp.yaml', {
        server: { command: ['fake-server', '--port', '{port}'], env: { HF_TOKEN: token }, readyTimeout: '5m' },
        telemetry: { enabled: false },
        trials: 2,
      }),
  };
}

const row = (db: Db, runId: number) => {
  const run = getRun(db, runId)!;
  return { status: run.status, message: run.message };
};

test('an experiment whose file was removed, or edited, since it was loaded runs as loaded: its secret, logs beside the store', async (t) => {
  const { dir, db, file } = lab(t);
  for (const change of ['removed', 'edited'] as const) {
    const path = file();
    const experiment = loadExperiment(path);
    if (change === 'removed') rmSync(path);
    else file('hf_another0secret0value0987654321');
    const executor = new FakeExecutor(() => ({ tpotMs: 3 }));
    t.after(() => executor.close());
    const outcome = await runExperiment({ db, experiment, executor });
    assert.equal(outcome.status, 'done', `${change}: ${outcome.message}`);
    assert.deepEqual(
      executor.launches.map((spec) => spec.env.HF_TOKEN),
      [TOKEN],
      `${change}: the server got the secret of the experiment given`,
    );
    assert.equal(executor.launches[0]!.logPath.startsWith(join(dir, 'logs', `run-${outcome.runId}`)), true, executor.launches[0]!.logPath);
  }
});

test('a throw before the first trial (a resume that cannot restore its secrets) ends the run failed with its cause', async (t) => {
  const { db, file } = lab(t);
  const path = file();
  const runId = createRun(db, loadExperiment(path));
  rmSync(path);
  const executor = new FakeExecutor(() => ({ tpotMs: 3 }));
  t.after(() => executor.close());
  const error = await runExperiment({ db, runId, executor }).then(
    () => undefined,
    (thrown: unknown) => messageOf(thrown),
  );
  assert.match(error ?? '', new RegExp(`run ${runId} needs its experiment file for the secrets the store does not keep`));
  const stored = row(db, runId);
  assert.equal(stored.status, 'failed');
  assert.match(stored.message ?? '', /needs its experiment file/);
  assert.equal(executor.launches.length, 0);
});

test('a resume given the experiment takes the secrets from it, not from the removed file', async (t) => {
  const { db, file } = lab(t);
  const path = file();
  const experiment = loadExperiment(path);
  const runId = createRun(db, experiment);
  rmSync(path);
  const executor = new FakeExecutor(() => ({ tpotMs: 3 }));
  t.after(() => executor.close());
  const outcome = await runExperiment({ db, runId, experiment, executor });
  assert.equal(outcome.status, 'done', outcome.message);
  assert.equal(executor.launches[0]!.env.HF_TOKEN, TOKEN);
});

test('a server config that cannot start: the run ends failed, never left running', async (t) => {
  const { db, file } = lab(t);
  const executor = new FakeExecutor(() => ({ tpotMs: 3 }));
  executor.launch = () => Promise.reject(new Error('no GPU left'));
  const error = await runExperiment({ db, experiment: loadExperiment(file()), executor }).then(
    () => undefined,
    (thrown: unknown) => messageOf(thrown),
  );
  assert.match(error ?? '', /no GPU left/);
  assert.equal(row(db, 1).status, 'failed');
});

test('a resume says what became of the servers a killed runner left: never "stopped on resume" for one it did not stop', async (t) => {
  const { db, file } = lab(t);
  const experiment = loadExperiment(file());
  const runId = createRun(db, experiment);
  const serverKey = experiment.variants[0]!.serverKey;
  const leftover = (pid?: number) => {
    const id = insertServer(db, { runId, runnerPid: 999_999, serverKey, label: 'baseline', host: 'local', logPath: '/dev/null' });
    if (pid !== undefined) updateServer(db, id, { pid });
    return id;
  };
  // Killed before its server ran (no pid recorded), and after its server exited on its own.
  const exited = spawnSync('true').pid;
  const unrecorded = leftover();
  const gone = leftover(exited);
  const executor = new FakeExecutor(() => ({ tpotMs: 3 }));
  t.after(() => executor.close());
  const outcome = await runExperiment({ db, runId, experiment, executor });
  assert.equal(outcome.status, 'done', outcome.message);
  const message = (id: number) => (db.prepare('SELECT message FROM servers WHERE id = ?').get(id) as { message: string }).message;
  assert.match(message(unrecorded), /before the server ran \(no pid recorded/);
  assert.equal(message(gone), 'its runner was gone; the server had exited');
});
