/**
 * SshExecutor against a real OpenSSH server on 127.0.0.1 (ci/start-sshd.sh), running the real simulator as the
 * "remote" server. Skipped, saying why, where that sshd is not running.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { SshExecutor } from '../src/exec/ssh.js';
import type { ExecutorConfig } from '../src/exec/types.js';
import { groupAlive } from '../src/launch/process-group.js';
import type { ServerSpec } from '../src/launch/types.js';
import type { BenchOptions } from '../src/load/types.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { NotReadyError } from '../src/ready/errors.js';
import { processAlive } from '../src/util/proc-identity.js';
import { firstStartLosesPort, lostPortNote } from './support-port-race.js';
import { ciSshd, needs } from './support-services.js';
import { BIN, killSshdSessions, processesWith, uniqueModel } from './support-ssh.js';
import { waitFor } from './support-wait.js';

const ci = ciSshd();
const NO_SSH_CLIENT = spawnSync('ssh', ['-V']).error ? 'no `ssh` client on PATH: apt-get install openssh-client' : undefined;

function setup(t: TestContext, client: 'local' | 'remote' = 'local') {
  const sshd = ci.sshd!;
  const model = uniqueModel();
  const dir = mkdtempSync(join(tmpdir(), 'servelab-ssh-test-'));
  const lines: string[] = [];
  const config: Extract<ExecutorConfig, { kind: 'ssh' }> = {
    kind: 'ssh',
    host: sshd.host,
    port: sshd.port,
    identityFile: sshd.identityFile,
    sshOptions: [`UserKnownHostsFile=${sshd.knownHosts}`, 'StrictHostKeyChecking=yes'],
    // The "remote" host is this machine: its files are visible here, which lets the tests look behind the scenes.
    remoteDir: join(dir, 'remote'),
    remoteServelab: `${process.execPath} ${BIN}`,
    client,
  };
  const executor = new SshExecutor(config, { workDir: dir, log: (line) => lines.push(line) });
  t.after(async () => {
    await executor.close().catch(() => undefined);
    for (const pgid of jobGroups(dir)) if (groupAlive(pgid)) process.kill(-pgid, 'SIGKILL');
    for (const pid of processesWith(model)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return { executor, dir, lines, model };
}

function simulatorSpec(dir: string, model: string, args: string[], readyTimeoutMs = 120_000): ServerSpec {
  return {
    command: [process.execPath, BIN, 'simulate', '--port', '{port}', '--model', model, '--jitter', '0', '--ttft-ms', '1', '--tpot-ms', '1', ...args],
    env: { SERVELAB_TEST_MARK: 'from ssh test' },
    unsetEnv: ['SERVELAB_TEST_UNSET'],
    profile: BUILTIN_PROFILES.simulator!,
    logPath: join(dir, 'server.log'),
    readyTimeoutMs,
  };
}

function benchOptions(baseUrl: string): BenchOptions {
  return {
    baseUrl,
    backend: 'openai-completions',
    workload: { kind: 'concurrency', concurrency: 2, requests: 6 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 16 }, outputTokens: { kind: 'fixed', value: 8 }, seed: 1 },
    warmupRequests: 1,
    ignoreEos: true,
    requestTimeoutMs: 30_000,
    specMetrics: 'none',
  };
}

/** Process groups of the jobs started under this test's remoteDir (read from their pgid files). */
function jobGroups(dir: string): number[] {
  const remote = join(dir, 'remote');
  if (!existsSync(remote)) return [];
  return readdirSync(remote)
    .map((job) => join(remote, job, 'pgid'))
    .filter(existsSync)
    .map((file) => Number(readFileSync(file, 'utf8').trim()));
}

describe('ssh executor against a real sshd', { timeout: 300_000 }, () => {
  test('launches on the host, serves through a local forward, runs commands, stops the server', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    const server = await executor.launch(simulatorSpec(dir, model, ['--load-ms', '3000']), {});
    const remotePort = Number(server.command[server.command.indexOf('--port') + 1]);
    assert.match(server.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(new URL(server.baseUrl).port, String(remotePort), 'reached through a forward, not the server port');
    assert.equal(server.env.SERVELAB_TEST_MARK, 'from ssh test', 'env read back from the running process');
    assert.ok(server.ready.checks.includes('generation'));
    assert.ok(
      server.ready.phases.some((phase) => phase.phase === 'loading weights'),
      'log phases seen through the mirrored log',
    );

    const result = await executor.bench(benchOptions(server.baseUrl));
    assert.equal(result.levels[0]?.completed, 6);

    const uname = await executor.run(['sh', '-c', 'echo "$0 ok"', 'quoted arg']);
    assert.deepEqual([uname.code, uname.stdout.trim()], [0, 'quoted arg ok']);
    assert.equal((await executor.run(['sh', '-c', 'exit 3'])).code, 3);

    // The local log mirrors the host's by polling: the last startup lines may still be on their way.
    assert.ok(await waitFor(() => /Application startup complete/.test(readFileSync(server.logPath, 'utf8')), 30_000), readFileSync(server.logPath, 'utf8'));
    assert.ok((await server.logTail(5)).length > 0);
    const [pgid] = jobGroups(dir);
    assert.ok(pgid && groupAlive(pgid));
    await server.stop();
    assert.equal(groupAlive(pgid), false, 'server process group gone after stop');
    assert.deepEqual(processesWith(model), []);
    assert.deepEqual(await server.exited, { code: null, signal: 'SIGTERM' });
    assert.deepEqual(jobGroups(dir), [], 'job directory removed from the host once its log was read back');
  });

  test('a picked port taken on the host before the server binds it: started again on another port', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    const race = firstStartLosesPort(dir);
    const spec = simulatorSpec(dir, model, ['--load-ms', '0']);
    const notes: string[] = [];
    const server = await executor.launch({ ...spec, command: [...race.prefix, ...spec.command] }, { onNote: (line) => notes.push(line) });
    t.after(() => server.stop());
    const [lost, won] = race.ports();
    assert.equal(race.ports().length, 2);
    assert.notEqual(lost, won);
    assert.equal(server.command[server.command.indexOf('--port') + 1], String(won));
    assert.deepEqual(notes, [lostPortNote(lost!)]);
    assert.equal((await executor.bench(benchOptions(server.baseUrl))).levels[0]?.completed, 6);
  });

  test('a dropped connection during the readiness wait reconnects; the same server becomes ready and is stopped', needs(ci.skip), async (t) => {
    const { executor, dir, lines, model } = setup(t);
    let dropped = false;
    const drop = async () => {
      dropped = true;
      process.kill(executor.connection.masterPid!, 'SIGKILL');
      killSshdSessions();
    };
    const launching = executor.launch(simulatorSpec(dir, model, ['--load-ms', '6000']), {
      onProgress: (progress) => {
        if (!dropped && progress.phase === 'loading weights') void drop();
      },
    });
    const server = await launching;
    assert.ok(dropped, 'the connection was dropped during the wait');
    assert.ok(
      lines.some((line) => /lost; reconnecting/.test(line)),
      lines.join('\n'),
    );
    assert.ok(await executor.connection.waitConnected(30_000), 'master re-established');
    assert.ok(
      lines.some((line) => /re-established/.test(line)),
      lines.join('\n'),
    );
    assert.equal(jobGroups(dir).length, 1, 'one server started, not a second one');

    // The forward is back on the same local port: the URL handed out still works.
    const result = await executor.bench(benchOptions(server.baseUrl));
    assert.equal(result.levels[0]?.completed, 6);

    // Drop it again while the server runs: the watch keeps going and stop still reaches the host.
    process.kill(executor.connection.masterPid!, 'SIGKILL');
    killSshdSessions();
    await delay(500);
    const [pgid] = jobGroups(dir);
    assert.ok(groupAlive(pgid!), 'the server survived both drops');
    await executor.close();
    assert.equal(groupAlive(pgid!), false, 'close() stopped the remote server');
    assert.deepEqual(processesWith(model), []);
  });

  test('a server that crashes while loading is reported with its log tail and leaves nothing running', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    await assert.rejects(executor.launch(simulatorSpec(dir, model, ['--load-ms', '3000', '--fail', 'crash']), {}), (error: unknown) => {
      assert.ok(error instanceof NotReadyError, String(error));
      // The exit follows the traceback within the log poll: whichever the watch sees first ends the launch, both
      // naming the cause (as in launch-server's crash test). CI once saw the fatal line first.
      assert.ok(['process-exited', 'fatal-log'].includes(error.kind), error.kind);
      assert.match(error.message, /engine failed to start/);
      assert.ok((error.logTail ?? []).length > 0, 'log tail attached');
      return true;
    });
    assert.deepEqual(processesWith(model), []);
  });

  test('a CUDA OOM on the host is reported as OOM (the most specific fatal line), not as the Traceback before it', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    await assert.rejects(executor.launch(simulatorSpec(dir, model, ['--load-ms', '60000', '--fail', 'oom', '--fail-at-ms', '200']), {}), (error: unknown) => {
      assert.ok(error instanceof NotReadyError, String(error));
      assert.equal(error.kind, 'fatal-log');
      assert.match(error.message, /CUDA out of memory: torch\.OutOfMemoryError/);
      assert.match(error.hint, /gpu-memory-utilization/);
      assert.ok(
        error.logTail?.some((line) => /Traceback/.test(line)),
        'the Traceback came first',
      );
      return true;
    });
    assert.deepEqual(processesWith(model), []);
  });

  test('a fixed port already in use on the host fails before anything starts there', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    const holder = createServer().listen(0, '127.0.0.1');
    t.after(() => holder.close());
    await once(holder, 'listening');
    const port = (holder.address() as AddressInfo).port;
    await assert.rejects(executor.launch({ ...simulatorSpec(dir, model, []), port }, {}), new RegExp(`port ${port} is already in use on \\S*127\\.0\\.0\\.1`));
    assert.deepEqual(jobGroups(dir), [], 'no job was started on the host');
  });

  test('a picked port another server on the host takes and answers on before ours binds: started again on another port', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    // The other server carries the test's model name: the setup's cleanup stops it.
    const race = firstStartLosesPort(dir, 'server');
    const spec = simulatorSpec(dir, model, ['--load-ms', '0']);
    const notes: string[] = [];
    const server = await executor.launch({ ...spec, command: [...race.prefix, ...spec.command] }, { onNote: (line) => notes.push(line) });
    t.after(() => server.stop());
    const [lost, won] = race.ports();
    assert.equal(server.command[server.command.indexOf('--port') + 1], String(won));
    assert.deepEqual(notes, [lostPortNote(lost!)]);
    assert.ok(processAlive(race.thiefPid()!), 'the server that took the port is not ours to stop');
  });

  test('a port taken on the host by another process: readiness fails instead of measuring that server', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    // The launched job never listens; a simulator in its own session (cleaned up by its model name) takes the port.
    const impostor = `setsid "${process.execPath}" "${BIN}" simulate --port "$1" --model ${model}-impostor --load-ms 0 & echo "IMPOSTOR=$!"; exec sleep 60`;
    const spec = { ...simulatorSpec(dir, model, []), command: ['sh', '-c', impostor, 'sh', '{port}'] };
    await assert.rejects(executor.launch(spec, {}), (error: unknown) => {
      const impostorPid = Number(/IMPOSTOR=(\d+)/.exec(readFileSync(spec.logPath, 'utf8'))?.[1]);
      assert.ok(error instanceof NotReadyError, String(error));
      assert.equal(error.kind, 'wrong-server');
      assert.match(error.message, new RegExp(`is served by pid ${impostorPid} \\(.*-impostor.*\\), not by the launched server`));
      return true;
    });
  });

  test('an abort (Ctrl-C) during the wait stops the remote server', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    const controller = new AbortController();
    const launching = executor.launch(simulatorSpec(dir, model, ['--load-ms', '60000']), {
      signal: controller.signal,
      onProgress: (progress) => progress.phase === 'loading weights' && controller.abort(),
    });
    await assert.rejects(launching, (error: unknown) => error instanceof NotReadyError && error.kind === 'aborted');
    assert.deepEqual(processesWith(model), []);
  });

  test('the local log header of a remote launch holds no secret; the server still gets the real one', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t);
    const secret = 'sk-SECRETssh0123456789abcdef';
    const spec = simulatorSpec(dir, model, ['--load-ms', '300']);
    // A wrapper that refuses to start without the real key, so a redacted launch would fail.
    const command = [
      'sh',
      '-c',
      '[ "$1" = "--api-key" ] && [ "$2" = "$EXPECTED_KEY" ] || exit 7; shift 2; exec "$@"',
      'sim',
      '--api-key',
      secret,
      ...spec.command,
    ];
    const server = await executor.launch({ ...spec, command, env: { ...spec.env, EXPECTED_KEY: secret } }, {});
    const log = readFileSync(server.logPath, 'utf8');
    assert.match(log, /--- servelab launch on .*--api-key <redacted:[0-9a-f]{12}>/);
    assert.ok(!log.includes('SECRET'), log);
    await server.stop();
  });

  test('client: remote runs servelab bench on the host against the server port', needs(ci.skip), async (t) => {
    const { executor, dir, model } = setup(t, 'remote');
    const server = await executor.launch(simulatorSpec(dir, model, ['--load-ms', '300']), {});
    const result = await executor.bench(benchOptions(server.baseUrl));
    assert.equal(result.levels[0]?.completed, 6);
    assert.match(result.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.notEqual(result.baseUrl, server.baseUrl, 'the host-side client used the server port, not our forward');
    await server.stop();
    assert.deepEqual(processesWith(model), []);
  });
});

test('ssh executor: a host that refuses us is a clear UserError', { ...needs(NO_SSH_CLIENT), timeout: 60_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-ssh-test-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  // Port 1 on loopback: nothing listens there, so ssh fails fast without any network.
  const executor = new SshExecutor(
    { kind: 'ssh', host: '127.0.0.1', port: 1, client: 'local', sshOptions: ['ConnectTimeout=5'] },
    { workDir: dir, log: () => {} },
  );
  t.after(() => executor.close());
  await assert.rejects(executor.run(['true']), /cannot connect to 127\.0\.0\.1 over ssh: .*refused/i);
});
