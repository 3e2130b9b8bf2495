import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { openStore } from '../src/store/db.js';
import { startUi } from '../src/ui/server.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { FakeExecutor } from './support-fake-executor.js';
import { waitFor } from './support-wait.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A fresh tmpfs of `size` (we are root in CI), unmounted and removed after the test; undefined when mount fails. */
function tmpfs(t: TestContext, size: string): string | undefined {
  const mountPoint = mkdtempSync(join(tmpdir(), 'servelab-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mountPoint], { stdio: 'ignore' });
  } catch {
    rmSync(mountPoint, { recursive: true, force: true });
    return undefined;
  }
  t.after(() => {
    execFileSync('umount', ['-l', mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  });
  return mountPoint;
}

function assertOneLineStoreError(stderr: string, store: string, cause: RegExp): void {
  const line = stderr.split('\n').find((text) => text.startsWith('servelab: '));
  assert.ok(line, stderr);
  assert.ok(line.includes(store), `names the store: ${line}`);
  assert.match(line, cause);
  assert.match(stderr, /\n {2}next: /);
  assert.doesNotMatch(stderr, /SqliteError|\n\s+at |internal error/);
}

test('a store locked for more than 10 s during a server start: clean error, server stopped, run failed with the resume hint', {
  timeout: 120_000,
}, async (t) => {
  const dir = tempDir(t, 'lock');
  const store = join(dir, 'servelab.db');
  const file = writeExperiment(dir, 'exp.yaml', { server: { command: simCommand({ loadMs: 4000 }), readyTimeout: '5m' }, trials: 1 });
  const running = cli(['run', file], { store, timeoutMs: 100_000 });
  const other = new Database(store, { timeout: 20_000 });
  t.after(() => other.close());
  // The server row appears with its pid at spawn; then a second connection takes the write lock for 14 s.
  const pidOf = (): number | undefined => {
    try {
      return (other.prepare('SELECT pid FROM servers WHERE pid IS NOT NULL').get() as { pid: number } | undefined)?.pid;
    } catch {
      return undefined;
    }
  };
  assert.ok(await waitFor(() => pidOf() !== undefined, 30_000), 'server spawned');
  const pid = pidOf()!;
  other.prepare('BEGIN IMMEDIATE').run();
  await delay(14_000);
  other.prepare('COMMIT').run();
  const result = await running;
  assert.notEqual(result.code, 0);
  assertOneLineStoreError(result.stderr, store, /locked by another process/);
  assert.match(result.stderr, /servelab run --resume 1/, result.stderr);
  assert.ok(await waitFor(() => !alive(pid), 10_000), 'the server was stopped');
  assert.equal((other.prepare('SELECT status FROM runs WHERE id = 1').get() as { status: string }).status, 'failed');
});

test('disk full (tmpfs) during a run: clean error naming the store, server stopped', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t, 'full');
  const mountPoint = tmpfs(t, '400k');
  if (mountPoint === undefined) return t.skip('cannot mount a tmpfs here (needs root)');
  const store = join(mountPoint, 'servelab.db');
  // Many requests with long outputs: the samples of one trial need more than the tmpfs has.
  const file = writeExperiment(dir, 'exp.yaml', {
    server: { command: simCommand({ tpotMs: 0 }), readyTimeout: '5m' },
    workloads: [{ kind: 'concurrency', concurrency: 32, requests: 2000 }],
    client: { prompts: { kind: 'synthetic', inputTokens: 8, outputTokens: 64, seed: 1 }, warmupRequests: 0 },
    trials: 2,
  });
  const result = await cli(['run', file], { store, timeoutMs: 100_000 });
  assert.notEqual(result.code, 0);
  assertOneLineStoreError(result.stderr, store, /disk is full/);
  assert.match(result.stderr, /servelab run --resume 1/);
  const db = new Database(store, { readonly: true });
  t.after(() => db.close());
  const pids = (db.prepare('SELECT pid FROM servers WHERE pid IS NOT NULL').all() as Array<{ pid: number }>).map((row) => row.pid);
  for (const pid of pids) assert.ok(await waitFor(() => !alive(pid), 10_000), `server ${pid} stopped`);
});

test('a corrupt store and a read-only store: one-line errors for writers; ls/show/report/ui read a read-only one', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'corrupt');
  const bad = join(dir, 'bad.db');
  writeFileSync(bad, Buffer.alloc(8192, 7));
  const file = writeExperiment(dir, 'exp.yaml', {});
  // Each command is a process of its own: run side by side, so a loaded machine's slow starts do not add up.
  const writers = [['ls'], ['show', '1'], ['report', '--out', join(dir, 'r')], ['ui', '--port', '0'], ['run', file]];
  const results = await Promise.all(writers.map((args) => cli(args, { store: bad })));
  results.forEach((result, index) => {
    assert.equal(result.code, 1, writers[index]!.join(' '));
    assertOneLineStoreError(result.stderr, bad, /not a valid servelab store/);
  });

  const mountPoint = tmpfs(t, '8m');
  if (mountPoint === undefined) return t.skip('cannot mount a tmpfs here (needs root)');
  const store = join(mountPoint, 'servelab.db');
  // The run to read back is measured on a fake machine, in this process: what is tested is reading it, not making it.
  const writer = openStore(store);
  const executor = new FakeExecutor(() => ({ tpotMs: 3 }));
  const made = await runExperiment({ db: writer, experiment: loadExperiment(file), executor, workDir: dir }).finally(() => executor.close());
  writer.close();
  assert.equal(made.status, 'done', made.message);
  execFileSync('mount', ['-o', 'remount,ro', mountPoint]);
  const readers = [['ls'], ['show', '1'], ['show', '1', '--json'], ['report', '1', '--out', join(dir, 'report')]];
  const read = await Promise.all(readers.map((args) => cli(args, { store })));
  read.forEach((result, index) => assert.equal(result.code, 0, `${readers[index]!.join(' ')}: ${result.stderr}`));
  const ui = await startUi({ storePath: store, host: '127.0.0.1', port: 0 });
  t.after(() => ui.close());
  assert.equal((await fetch(new URL('/api/runs/1', ui.url))).status, 200);
  const again = await cli(['run', file], { store });
  assert.equal(again.code, 1);
  assertOneLineStoreError(again.stderr, store, /cannot write to it/);
});
