import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { loadLaunchFile } from '../src/launch/config.js';
import { launchServer } from '../src/launch/launch.js';
import { freePort } from '../src/launch/port.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { UserError } from '../src/util/errors.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-server-schema-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The same server block as an experiment file's `server:` (indented, line 3 on) and as a launch file (line 1 on). */
function writeBoth(dir: string, name: string, block: string[]): { experiment: string; launch: string } {
  const experiment = join(dir, `${name}.exp.yaml`);
  const launch = join(dir, `${name}.launch.yaml`);
  writeFileSync(
    experiment,
    ['name: e', 'profile: simulator', 'server:', ...block.map((line) => `  ${line}`), 'workloads:', '  - { kind: single-stream, requests: 2 }', ''].join('\n'),
  );
  writeFileSync(launch, `${block.join('\n')}\n`);
  return { experiment, launch };
}

function errorOf(load: () => unknown): UserError {
  try {
    load();
  } catch (error) {
    assert.ok(error instanceof UserError, String(error));
    assert.equal(error.exitCode, 2, 'a bad file is a usage error');
    return error;
  }
  assert.fail('expected the file to be rejected');
}

/** Both loaders reject the block at the same key, each at its own line of its own file. */
function rejectedByBoth(t: TestContext, block: string[], key: string, blockLine: number, message: RegExp): void {
  const { experiment, launch } = writeBoth(tempDir(t), 'block', block);
  const fromExperiment = errorOf(() => loadExperiment(experiment));
  const fromLaunch = errorOf(() => loadLaunchFile(launch));
  assert.equal(fromExperiment.message.split(': ').slice(0, 2).join(': '), `${experiment}:${blockLine + 3}: server.${key}`);
  assert.equal(fromLaunch.message.split(': ').slice(0, 2).join(': '), `${launch}:${blockLine}: ${key}`);
  assert.match(fromExperiment.message, message);
  assert.match(fromLaunch.message, message);
}

describe('one server schema: the experiment `server:` block and `launch --config`', () => {
  test('the same block is accepted by both with the same values', (t) => {
    const block = [
      'command: "node {servelab} simulate --port {port}"',
      'env: { NCCL_PROTO: LL, STEPS: 3 }',
      'unsetEnv: [CUDA_VISIBLE_DEVICES]',
      'portRange: 21000-21099',
      'readyTimeout: 90s',
      'verifyServing: false',
      'model: m',
    ];
    const { experiment, launch } = writeBoth(tempDir(t), 'ok', block);
    const server = loadExperiment(experiment).variants[0]!.server;
    const file = loadLaunchFile(launch);
    assert.deepEqual(file.env, { NCCL_PROTO: 'LL', STEPS: '3' });
    assert.deepEqual(server.env, file.env);
    assert.deepEqual(server.unsetEnv, file.unsetEnv);
    assert.deepEqual(server.portRange, { low: 21000, high: 21099 });
    assert.deepEqual(file.portRange, server.portRange);
    assert.equal(server.readyTimeoutMs, 90_000);
    assert.equal(file.readyTimeout, 90_000);
    assert.equal(server.verifyServing, false);
    assert.equal(file.verifyServing, false);
    assert.equal(file.command.at(-1), '{port}', 'a command string is split on whitespace by both');
  });

  test('the same block is rejected by both, at the same key, with file:line', (t) => {
    // "A=B" would become the assignment A="B=value" in the server's environment.
    rejectedByBoth(t, ['command: [x, "{port}"]', 'env: { "A=B": 1 }'], 'env.A=B', 2, /expected an environment variable name/);
    rejectedByBoth(t, ['command: [x, "{port}"]', 'unsetEnv: ["NCCL PROTO"]'], 'unsetEnv[0]', 2, /expected an environment variable name/);
    rejectedByBoth(t, ['command: [x, "{port}"]', 'portRange: 30000-20000'], 'portRange', 2, /expected a port range "LO-HI"/);
    rejectedByBoth(t, ['command: [x, "{port}"]', 'port: 21000', 'portRange: 21000-21099'], 'portRange', 3, /either port .* or portRange/);
    rejectedByBoth(t, ['command: [x]', 'port: 70000'], 'port', 2, /at most 65535/);
    rejectedByBoth(t, ['command: []'], 'command', 1, /non-empty command/);
    rejectedByBoth(t, ['command: [x]', 'readyTimeout: soon'], 'readyTimeout', 2, /invalid duration "soon"/);
  });

  test("the launch file's old keys name their new ones at their own line", (t) => {
    const dir = tempDir(t);
    const path = join(dir, 'server.yaml');
    writeFileSync(path, 'command: [x]\ntimeout: 30s\n');
    assert.match(errorOf(() => loadLaunchFile(path)).message, /server\.yaml:2: timeout: "timeout" is now called "readyTimeout"; rename it$/);
    writeFileSync(path, 'command: [x]\nverify: false\n');
    assert.match(errorOf(() => loadLaunchFile(path)).message, /server\.yaml:2: verify: "verify" is now called "verifyServing"/);
  });

  test('a port range needs {port} in the command', (t) => {
    const { experiment } = writeBoth(tempDir(t), 'noport', ['command: [x]', 'portRange: 21000-21099']);
    assert.match(errorOf(() => loadExperiment(experiment)).message, /server\.portRange: variant "baseline": the command has no \{port\}/);
  });

  test('a free port is picked inside the range', async (t) => {
    const dir = tempDir(t);
    const low = await freePort('127.0.0.1');
    const server = await launchServer({
      command: [process.execPath, BIN, 'simulate', '--port', '{port}', '--jitter', '0'],
      env: {},
      profile: BUILTIN_PROFILES.simulator!,
      logPath: join(dir, 'server.log'),
      readyTimeoutMs: 30_000,
      portRange: { low, high: low },
    });
    t.after(() => server.stop());
    assert.equal(server.baseUrl, `http://127.0.0.1:${low}`);
  });
});

describe('launch: usage errors exit 2 before anything starts', () => {
  const launch = (args: string[]) => spawnSync(process.execPath, [BIN, 'launch', ...args], { encoding: 'utf8', timeout: 30_000 });

  test('a fixed port someone holds', async (t) => {
    const holder = createServer().listen(0, '127.0.0.1');
    await once(holder, 'listening');
    t.after(() => holder.close());
    const port = (holder.address() as { port: number }).port;
    const run = launch(['--port', String(port), '--store', join(tempDir(t), 's.db'), '--', 'true']);
    assert.equal(run.status, 2, run.stderr);
    assert.match(run.stderr, new RegExp(`^servelab: port ${port} is already in use`));
    assert.doesNotMatch(run.stderr, /servelab: starting/);
  });

  test('bad or contradictory port settings, bad env names', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--port-range', '20000'], /--port-range "20000" is not a port range/],
      [['--port-range', '9-8'], /--port-range "9-8" is not a port range/],
      [['--port', '21000', '--port-range', '21000-21099'], /a fixed port and a port range contradict each other/],
      [['--port-range', '21000-21099', '--profile', 'vllm'], /the command has no \{port\}/],
      [['--env', 'A-B=1'], /"A-B" is not an environment variable name/],
      [['--unset-env', '1X'], /--unset-env "1X" is not an environment variable name/],
    ];
    for (const [args, message] of cases) {
      const run = launch([...args, '--', 'true']);
      assert.equal(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
      assert.match(run.stderr, message);
      assert.doesNotMatch(run.stderr, /servelab: starting/);
    }
  });
});
