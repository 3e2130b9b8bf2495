import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { groupAlive } from '../src/launch/process-group.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const SIM = [process.execPath, BIN, 'simulate', '--port', '{port}', '--jitter', '0', '--ttft-ms', '1', '--tpot-ms', '1'];

interface Launcher {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-launch-cli-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function startLauncher(t: TestContext, args: string[], command: string[]): Launcher {
  const child = spawn(process.execPath, [BIN, 'launch', ...args, '--', ...command], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exit = once(child, 'exit').then(([code]) => code as number | null);
  const guard = setTimeout(() => child.kill('SIGKILL'), 90_000);
  t.after(() => {
    clearTimeout(guard);
    child.kill('SIGKILL');
  });
  return { child, stdout: () => stdout, stderr: () => stderr, exit };
}

async function until(condition: () => boolean, what: string, withinMs = 30_000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await delay(20);
  }
}

/** Stop a leftover group if a test failed half-way, so no simulator outlives the suite. */
function reapGroup(t: TestContext, pid: () => number | undefined): void {
  t.after(() => {
    const leader = pid();
    if (leader && groupAlive(leader)) process.kill(-leader, 'SIGKILL');
  });
}

describe('servelab launch (CLI)', () => {
  test("--port is checked by the server file's port rule: one line, exit 2", () => {
    for (const port of ['70000', 'abc', '1.5']) {
      const run = spawnSync(process.execPath, [BIN, 'launch', '--port', port, '--', 'true'], { encoding: 'utf8' });
      assert.equal(run.status, 2, run.stderr);
      assert.match(run.stderr, new RegExp(`^servelab: --port "${port.replace('.', '\\.')}" is not a port number\n {2}next: give an integer 1-65535\n$`));
    }
  });

  test('SIGTERM after ready stops the server group: no orphan is left', async (t) => {
    const dir = tempDir(t);
    const launcher = startLauncher(t, ['--json', '--store', join(dir, 'store.db')], [...SIM, '--load-ms', '300']);
    let pid: number | undefined;
    reapGroup(t, () => pid);
    await until(() => launcher.stdout().includes('\n'), 'the ready JSON');
    const ready = JSON.parse(launcher.stdout());
    pid = ready.pid as number;
    assert.equal(ready.ok, true);
    assert.doesNotThrow(() => process.kill(pid!, 0), 'the simulator runs while the launcher is in the foreground');

    launcher.child.kill('SIGTERM');
    assert.equal(await launcher.exit, 0);
    assert.throws(() => process.kill(pid!, 0), { code: 'ESRCH' });
    assert.equal(groupAlive(pid), false);
  });

  test('SIGTERM while the server is still loading stops it too (exit 130)', async (t) => {
    const dir = tempDir(t);
    const log = join(dir, 'server.log');
    const script = `echo "PID=$$"; exec ${SIM.map((part) => `"${part}"`).join(' ')} --load-ms 60000`;
    const launcher = startLauncher(t, ['--log', log, '--store', join(dir, 'store.db')], ['sh', '-c', script]);
    let pid: number | undefined;
    reapGroup(t, () => pid);
    await until(() => /loading weights/.test(launcher.stderr()), 'the loading phase');
    pid = Number(/PID=(\d+)/.exec(readFileSync(log, 'utf8'))?.[1]);
    assert.ok(pid > 0);

    launcher.child.kill('SIGTERM');
    assert.equal(await launcher.exit, 130);
    assert.equal(groupAlive(pid), false);
    assert.match(launcher.stderr(), /interrupted/);
  });

  test('a crash exits 4 with the log tail; --exit-when-ready records the startup for the next prediction', async (t) => {
    const dir = tempDir(t);
    const store = join(dir, 'store.db');
    const crashed = startLauncher(
      t,
      ['--store', store, '--log', join(dir, 'crash.log')],
      [...SIM, '--load-ms', '1000', '--fail', 'crash', '--fail-at-ms', '100'],
    );
    assert.equal(await crashed.exit, 4);
    assert.match(
      crashed.stderr(),
      /last \d+ lines of the server log[\s\S]*RuntimeError: Engine core initialization failed[\s\S]*servelab: server (exited with code 1|log shows engine failed to start)/,
    );

    const first = startLauncher(t, ['--store', store, '--exit-when-ready'], [...SIM, '--load-ms', '200']);
    assert.equal(await first.exit, 0, first.stderr());
    assert.match(first.stdout(), /^ready after/);
    const second = startLauncher(t, ['--store', store, '--exit-when-ready'], [...SIM, '--load-ms', '200']);
    assert.equal(await second.exit, 0, second.stderr());
    assert.match(second.stderr(), /last ready after/);
  });

  test('--detach exits once ready and leaves the server running', async (t) => {
    const dir = tempDir(t);
    const launcher = startLauncher(t, ['--json', '--detach', '--store', join(dir, 'store.db')], [...SIM, '--load-ms', '100']);
    let pid: number | undefined;
    reapGroup(t, () => pid);
    assert.equal(await launcher.exit, 0, launcher.stderr());
    const ready = JSON.parse(launcher.stdout());
    pid = ready.pid as number;
    assert.ok(groupAlive(pid), 'the server outlives the launcher');
    const health = await fetch(`${ready.baseUrl}/health`);
    assert.equal(health.status, 200);
    process.kill(-pid, 'SIGTERM');
    await until(() => !groupAlive(pid!), 'the detached server to stop');
  });

  test('--config: command, env and an inline profile come from YAML; flags win', async (t) => {
    const dir = tempDir(t);
    const config = join(dir, 'server.yaml');
    writeFileSync(
      config,
      [
        `command: [${[...SIM, '--load-ms', '100'].map((part) => JSON.stringify(part)).join(', ')}]`,
        'env: { SERVELAB_TEST_VAR: 42 }',
        'profile:',
        '  extends: simulator',
        '  phasePatterns: [{ name: "sim booting", pattern: "servelab simulator listening" }]',
        'readyTimeout: 30s',
      ].join('\n'),
    );
    const launcher = startLauncher(
      t,
      ['--config', config, '--json', '--exit-when-ready', '--store', join(dir, 'store.db'), '--env', 'SERVELAB_TEST_FLAG=1'],
      [],
    );
    assert.equal(await launcher.exit, 0, launcher.stderr());
    const ready = JSON.parse(launcher.stdout());
    assert.ok(
      ready.phases.some((phase: { phase: string }) => phase.phase === 'sim booting'),
      JSON.stringify(ready.phases),
    );

    writeFileSync(config, 'command: [x]\nport: "eighty"\n');
    const bad = startLauncher(t, ['--config', config], []);
    assert.equal(await bad.exit, 2, 'a bad config file is a usage error');
    assert.match(bad.stderr(), /server\.yaml:2: port: expected a number, got "eighty"/);
  });
});
