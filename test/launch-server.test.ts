import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { launchServer } from '../src/launch/launch.js';
import { groupAlive } from '../src/launch/process-group.js';
import type { RunningServer, ServerSpec } from '../src/launch/types.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { NotReadyError } from '../src/ready/errors.js';
import { UserError } from '../src/util/errors.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const simulator = BUILTIN_PROFILES.simulator!;

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-launch-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function simSpec(dir: string, simArgs: string[], overrides: Partial<ServerSpec> = {}): ServerSpec {
  return {
    command: [process.execPath, BIN, 'simulate', '--port', '{port}', '--jitter', '0', '--ttft-ms', '1', '--tpot-ms', '1', ...simArgs],
    env: {},
    profile: simulator,
    logPath: join(dir, 'server.log'),
    readyTimeoutMs: 30_000,
    ...overrides,
  };
}

/** Launch, and make sure the group is gone after the test whatever happens. */
async function launch(t: TestContext, spec: ServerSpec): Promise<RunningServer> {
  const server = await launchServer(spec);
  t.after(() => server.stop());
  return server;
}

async function launchFailure(spec: ServerSpec): Promise<NotReadyError> {
  try {
    const server = await launchServer(spec);
    await server.stop();
  } catch (error) {
    assert.ok(error instanceof NotReadyError, `expected NotReadyError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the launch to fail');
}

describe('launchServer', () => {
  test('starts the simulator on a free port, follows its log phases, and stop() ends the whole group', async (t) => {
    const dir = tempDir(t);
    const phases: string[] = [];
    const server = await launchServer(simSpec(dir, ['--load-ms', '600']), { onProgress: (progress) => phases.push(progress.phase) });
    t.after(() => server.stop());
    assert.match(server.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.ok(!server.command.includes('{port}'));
    assert.ok(server.command.includes(server.baseUrl.split(':')[2]!), 'the chosen port was substituted');
    const recorded = server.ready.phases.map((phase) => phase.phase);
    for (const phase of ['loading weights', 'capturing CUDA graphs', 'Uvicorn running'])
      assert.ok(recorded.includes(phase), `${phase} in ${recorded.join(', ')}`);
    assert.ok(phases.includes('loading weights'));
    assert.deepEqual(server.ready.checks, ['health', 'models', 'generation']);
    assert.match(readFileSync(server.logPath, 'utf8'), /Uvicorn running on/);
    assert.ok((await server.logTail(2)).some((line) => /Uvicorn running/.test(line)));

    assert.ok(groupAlive(server.pid));
    await server.stop();
    assert.equal(groupAlive(server.pid), false);
    assert.throws(() => process.kill(server.pid, 0), { code: 'ESRCH' });
  });

  test('the declared environment is set and unset for the server', async (t) => {
    const dir = tempDir(t);
    process.env.SERVELAB_TEST_UNSET_ME = 'inherited';
    t.after(() => delete process.env.SERVELAB_TEST_UNSET_ME);
    const script = `echo "FOO=$SERVELAB_TEST_FOO UNSET=\${SERVELAB_TEST_UNSET_ME:-gone}"; exec "${process.execPath}" "${BIN}" simulate --port {port} --load-ms 0`;
    const server = await launch(t, {
      ...simSpec(dir, []),
      command: ['sh', '-c', script],
      env: { SERVELAB_TEST_FOO: 'bar' },
      unsetEnv: ['SERVELAB_TEST_UNSET_ME'],
    });
    assert.match(readFileSync(server.logPath, 'utf8'), /FOO=bar UNSET=gone/);
    assert.equal(server.env.SERVELAB_TEST_FOO, 'bar');
    assert.equal(server.env.SERVELAB_TEST_UNSET_ME, undefined);
  });

  test('a crash during load fails at once with the exit code and the traceback in the log tail', async (t) => {
    const dir = tempDir(t);
    const started = Date.now();
    const error = await launchFailure(simSpec(dir, ['--load-ms', '1000', '--fail', 'crash', '--fail-at-ms', '200']));
    // Normally the exit (code 1) lands within the settle time after the traceback; on a starved host the fatal
    // line may be reported first. Both end the launch at once with exit code 4 and name the cause.
    assert.ok(['process-exited', 'fatal-log'].includes(error.kind), error.kind);
    assert.equal(error.exitCode, 4);
    assert.match(error.message, /exited with code 1 before becoming ready \(log shows engine failed to start|server log shows engine failed to start/);
    assert.ok(error.logTail?.some((line) => /RuntimeError: Engine core initialization failed/.test(line)));
    assert.ok(Date.now() - started < 20_000, 'did not wait for the readiness timeout');
  });

  test('an OOM line fails the launch although the process stays up, and the group is killed', async (t) => {
    const dir = tempDir(t);
    const script = `echo "PID=$$"; exec "${process.execPath}" "${BIN}" simulate --port {port} --load-ms 60000 --fail oom --fail-at-ms 200`;
    const error = await launchFailure({ ...simSpec(dir, []), command: ['sh', '-c', script] });
    assert.equal(error.kind, 'fatal-log');
    assert.equal(error.exitCode, 4);
    assert.match(error.message, /CUDA out of memory: torch\.OutOfMemoryError/);
    assert.match(error.hint, /gpu-memory-utilization/);
    assert.ok(error.logTail?.some((line) => /Traceback/.test(line)));
    const pid = Number(/PID=(\d+)/.exec(readFileSync(join(dir, 'server.log'), 'utf8'))?.[1]);
    assert.ok(pid > 0);
    assert.equal(groupAlive(pid), false);
  });

  test('a hang times out (exit code 3) and leaves no process behind', async (t) => {
    const dir = tempDir(t);
    const script = `echo "PID=$$"; exec "${process.execPath}" "${BIN}" simulate --port {port} --load-ms 60000 --fail hang --fail-at-ms 100`;
    const error = await launchFailure({ ...simSpec(dir, []), command: ['sh', '-c', script], readyTimeoutMs: 1_500 });
    assert.equal(error.kind, 'timeout');
    assert.equal(error.exitCode, 3);
    const pid = Number(/PID=(\d+)/.exec(readFileSync(join(dir, 'server.log'), 'utf8'))?.[1]);
    assert.ok(pid > 0);
    assert.equal(groupAlive(pid), false);
  });

  test('a command that does not exist is a user error', async (t) => {
    const dir = tempDir(t);
    await assert.rejects(
      launchServer({ ...simSpec(dir, []), command: ['servelab-no-such-server', '--port', '{port}'] }),
      (error: UserError) => error instanceof UserError && /cannot start "servelab-no-such-server"/.test(error.message),
    );
  });

  test('no {port}, no --port and a profile without a default port is a user error', async (t) => {
    const dir = tempDir(t);
    await assert.rejects(launchServer({ ...simSpec(dir, []), command: ['my-server'], profile: BUILTIN_PROFILES.openai! }), /no port for the server/);
  });
});
