import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import Database from 'better-sqlite3';
import { groupAlive } from '../src/launch/process-group.js';
import { processAlive } from '../src/util/proc-identity.js';
import { cli, killWatchdogs, SERVELAB, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { pollFor, unlessNoSchema } from './support-wait.js';

/** PIDs of the simulator servers a killed runner left behind, from their logs. */
function serverPids(db: Database.Database): number[] {
  const logs = unlessNoSchema(() => db.prepare('SELECT log_path FROM servers').all() as Array<{ log_path: string }>, []);
  return logs.flatMap(({ log_path }) => {
    const match = existsSync(log_path) ? /Started server process \[(\d+)\]/.exec(readFileSync(log_path, 'utf8')) : null;
    return match ? [Number(match[1])] : [];
  });
}

/** `servelab run FILE` in the background, with a read-only view of its store once it exists. */
async function startRunner(t: TestContext, file: string, store: string): Promise<{ db: Database.Database; killRunner: () => Promise<void> }> {
  const runner = spawn(process.execPath, [SERVELAB, 'run', file], { env: { ...process.env, SERVELAB_STORE: store }, stdio: 'ignore' });
  const exited = new Promise((resolve) => runner.on('exit', resolve));
  t.after(() => runner.kill('SIGKILL'));
  await pollFor('the store', () => (existsSync(store) ? true : undefined), 30_000);
  const db = new Database(store, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  t.after(() => db.close());
  return {
    db,
    killRunner: async () => {
      // Its servers' watchdogs die with it, so they outlive it: only the resume can stop them.
      killWatchdogs(runner.pid!);
      runner.kill('SIGKILL');
      await exited;
    },
  };
}

describe('resume', () => {
  test('after SIGKILL mid-trial, --resume keeps finished trials, duplicates nothing and completes the run', async (t) => {
    const dir = tempDir(t, 'resume');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'resume.yaml', {
      name: 'crashy',
      trials: 3,
      server: { command: simCommand({ tpotMs: 5 }), readyTimeout: '5m' },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 48, seed: 3 }, warmupRequests: 1 },
      workloads: [{ kind: 'single-stream', requests: 4 }],
      variants: { baseline: {}, 'baseline-renamed': {} },
    });

    const { db, killRunner } = await startRunner(t, file, store);
    // The runner's servers run in their own process groups and outlive a runner SIGKILLed with its watchdogs.
    const orphans = new Set<number>();
    t.after(() => {
      for (const pid of orphans) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    });
    const count = (): number => unlessNoSchema(() => (db.prepare('SELECT COUNT(*) AS n FROM trials').get() as { n: number }).n, 0);
    // Kill while the third trial is in flight: two stored, the third has answered at least one request.
    await pollFor(
      'the third trial in flight',
      () => {
        for (const pid of serverPids(db)) orphans.add(pid);
        if (count() !== 2) return undefined;
        const progress = db.prepare('SELECT trial_label, completed FROM progress').get() as { trial_label: string; completed: number } | undefined;
        return progress?.trial_label.startsWith('trial 3/6 ') && progress.completed >= 1 ? true : undefined;
      },
      60_000,
    );
    await killRunner();
    for (const pid of serverPids(db)) orphans.add(pid);
    assert.ok(orphans.size >= 1, 'the killed runner left its server behind');
    const before = db.prepare('SELECT id, variant, block, finished_at FROM trials ORDER BY id').all();
    assert.equal(before.length, 2);
    assert.equal((db.prepare('SELECT status FROM runs').get() as { status: string }).status, 'running');

    const resumed = await cli(['run', file, '--resume'], { store });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, /resuming run 1 \(running, 2 trials measured\)/);
    assert.match(resumed.stderr, /2 of 6 trials already measured; 4 to go/);
    // The server the killed runner left behind was stopped before a new one started.
    assert.match(resumed.stderr, /stopping server \(pid \d+\) left running by the interrupted runner/);
    for (const pid of orphans) assert.equal(processAlive(pid), false, `server ${pid} stopped`);

    const after = db.prepare('SELECT id, variant, block, finished_at FROM trials ORDER BY id').all();
    assert.equal(after.length, 6);
    assert.deepEqual(after.slice(0, 2), before, 'finished trials are kept as they were');
    const distinct = db.prepare('SELECT COUNT(DISTINCT variant || workload || block || repetition) AS n FROM trials').get() as { n: number };
    assert.equal(distinct.n, 6);
    // The killed trial left no partial samples: exactly 4 per stored trial.
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM samples').get() as { n: number }).n, 6 * 4);
    assert.equal((db.prepare('SELECT status FROM runs').get() as { status: string }).status, 'done');
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n, 1);
  });

  test('a runner killed while its server loads the model: --resume stops that half-loaded server', async (t) => {
    const dir = tempDir(t, 'resume-load');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'slow-load.yaml', {
      name: 'slow-load',
      trials: 1,
      // Long enough to kill the runner mid-load on a busy machine; the resumed run pays it once more.
      server: { command: simCommand({ loadMs: 4000 }), readyTimeout: '5m' },
    });

    const { db, killRunner } = await startRunner(t, file, store);
    type ServerRow = { pid: number | null; status: string; phase: string };
    const serverRow = (): ServerRow | undefined =>
      unlessNoSchema(() => db.prepare('SELECT pid, status, phase FROM servers ORDER BY id LIMIT 1').get() as ServerRow | undefined, undefined);
    const pid = await pollFor('the server pid', () => serverRow()?.pid ?? undefined, 30_000);
    t.after(() => {
      if (groupAlive(pid)) process.kill(-pid, 'SIGKILL');
    });
    await killRunner();
    const row = serverRow();
    assert.equal(row?.status, 'starting', 'the runner was killed before its server was ready');
    assert.notEqual(row?.phase, 'ready');
    assert.ok(groupAlive(pid), 'the half-loaded server outlived its runner');

    const resumed = await cli(['run', file, '--resume'], { store });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, new RegExp(`stopping server \\(pid ${pid}\\) left running by the interrupted runner`));
    assert.equal(groupAlive(pid), false, 'the half-loaded server was stopped');
    assert.equal((db.prepare('SELECT status FROM runs').get() as { status: string }).status, 'done');
  });
});
