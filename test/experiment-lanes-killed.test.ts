import assert from 'node:assert/strict';
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { assertLaneTwoLeft, trialsOf, twins } from './support-lanes.js';

describe('lanes: a lane whose server is killed', () => {
  test('a lane whose server is killed mid-run and cannot come back: its trial in flight and the rest run on the other lane', async (t) => {
    const dir = tempDir(t, 'lanes-killed');
    const store = join(dir, 'servelab.db');
    // Once the test kills lane 2's server, that lane's machine is gone: its restarts fail.
    const script = [
      `if [ -e ${dir}/gone-$LANE ]; then echo "RuntimeError: CUDA error: an illegal memory access was encountered" >&2; exit 1; fi`,
      `exec ${simCommand().join(' ')}`,
    ].join('\n');
    const file = writeExperiment(dir, 'lanes.yaml', {
      name: 'lanes-killed',
      server: { command: ['sh', '-c', script], readyTimeout: '5m' },
      lanes: [{ env: { LANE: '0' } }, { env: { LANE: '1' } }],
      variants: twins,
      trials: 4,
      trialRetries: 1,
    });
    let finished = false;
    const running = cli(['run', file], { store, timeoutMs: 180_000 }).finally(() => (finished = true));
    let killed: number | undefined;
    while (killed === undefined && !finished) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (!existsSync(store)) continue;
      // Lane 2's server, ready, after that lane stored a trial: it is measuring (or about to).
      const server = serverOf(store, 1);
      if (server === undefined || !trialsOf(store, 1).some((trial) => trial.lane === 1)) continue;
      const gone = join(dir, 'gone-1');
      writeFileSync(gone, '');
      try {
        process.kill(server, 'SIGKILL');
      } catch (error) {
        // The row still said ready while the runner was stopping that server (CI saw ESRCH): wait for lane 2's next one.
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
        rmSync(gone);
        continue;
      }
      killed = server;
    }
    const run = await running;
    assert.ok(killed, `lane 2 never measured:\n${run.stderr}`);
    assert.equal(run.code, 0, run.stderr);
    assertLaneTwoLeft(run, store);
  });
});

/** The pid of `lane`'s server while it is ready, from the store; undefined before its tables exist. */
function serverOf(store: string, lane: number): number | undefined {
  const db = new Database(store, { readonly: true });
  try {
    const row = db.prepare("SELECT pid FROM servers WHERE run_id = 1 AND lane = ? AND status = 'ready' AND pid IS NOT NULL").get(lane) as
      | { pid: number }
      | undefined;
    return row?.pid;
  } catch {
    return undefined;
  } finally {
    db.close();
  }
}
