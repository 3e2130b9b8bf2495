/**
 * The launch pipeline shared by every launcher: placeholders and fingerprints, the fixed-port pre-check, the check
 * that the answering server is the launched one, and fatal log patterns (address in use, NCCL). Real processes only.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LocalExecutor } from '../src/exec/local.js';
import { parseListenerOwner } from '../src/exec/remote-shell.js';
import { collectFingerprint } from '../src/fingerprint/collect.js';
import { launchServer } from '../src/launch/launch.js';
import { freePort } from '../src/launch/port.js';
import { isPortProxy, listeningInodes } from '../src/launch/port-owner.js';
import type { ServerSpec } from '../src/launch/types.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { classifyLogLine } from '../src/profiles/classify.js';
import { resolveProfile } from '../src/profiles/user.js';
import { NotReadyError } from '../src/ready/errors.js';
import { UserError } from '../src/util/errors.js';
import { processAlive } from '../src/util/proc-identity.js';
import { firstStartLosesPort, lostPortNote } from './support-port-race.js';
import { waitFor } from './support-wait.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const SIM_ARGS = ['--jitter', '0', '--ttft-ms', '1', '--tpot-ms', '1', '--load-ms', '0'];

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-pipeline-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function simSpec(dir: string, overrides: Partial<ServerSpec> = {}): ServerSpec {
  return {
    command: [process.execPath, BIN, 'simulate', '--port', '{port}', ...SIM_ARGS],
    env: {},
    profile: BUILTIN_PROFILES.simulator!,
    logPath: join(dir, 'server.log'),
    readyTimeoutMs: 30_000,
    ...overrides,
  };
}

/** Another, healthy simulator holding `port`, as a user's forgotten server would; killed after the test. */
async function otherServer(t: TestContext, port: number): Promise<number> {
  const child = spawn(process.execPath, [BIN, 'simulate', '--port', String(port), '--model', 'someone-elses-model', ...SIM_ARGS], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => child.kill('SIGKILL'));
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  assert.ok(await waitFor(() => /listening on/i.test(output), 20_000), output);
  return child.pid!;
}

describe('launch pipeline', () => {
  test('{port} in an env value: the server gets the port, the fingerprint keeps the template, identical across launches', async (t) => {
    const dir = tempDir(t);
    const executor = new LocalExecutor();
    const fingerprints = [];
    const ports = [];
    for (let launch = 0; launch < 2; launch++) {
      const server = await launchServer(simSpec(dir, { env: { VLLM_PORT: '{port}', VLLM_HOST: '{host}', NCCL_PROTO: 'LL' } }));
      t.after(() => server.stop());
      ports.push(server.env.VLLM_PORT);
      assert.equal(server.baseUrl, `http://127.0.0.1:${server.env.VLLM_PORT}`, 'the env value was filled with the chosen port');
      assert.equal(server.env.VLLM_HOST, '127.0.0.1');
      const fingerprint = await collectFingerprint(executor, server.template);
      fingerprints.push({ command: fingerprint.command, env: fingerprint.env });
      await server.stop();
    }
    assert.notEqual(ports[0], ports[1], 'each launch picked its own free port');
    assert.deepEqual(fingerprints[0], fingerprints[1]);
    assert.equal(fingerprints[0]!.env.VLLM_PORT, '{port}');
    assert.equal(fingerprints[0]!.env.NCCL_PROTO, 'LL');
    assert.ok(fingerprints[0]!.command.includes('{port}'));
  });

  test('a fixed port held by another server fails at once, naming its pid and command line, before anything starts', async (t) => {
    const dir = tempDir(t);
    const port = await freePort('127.0.0.1');
    const holder = await otherServer(t, port);
    const started = Date.now();
    await assert.rejects(launchServer(simSpec(dir, { port })), (error: unknown) => {
      assert.ok(error instanceof UserError && !(error instanceof NotReadyError), String(error));
      assert.match(error.message, new RegExp(`^port ${port} is already in use by pid ${holder} \\(.*simulate --port ${port}`));
      assert.match(error.hint, /another port/);
      return true;
    });
    assert.ok(Date.now() - started < 2_000, 'failed before any wait');
    assert.equal(existsSync(join(dir, 'server.log')), false, 'nothing was launched');
  });

  test('a picked port taken before the server binds it: the launch starts again on another port and says so', async (t) => {
    const dir = tempDir(t);
    const race = firstStartLosesPort(dir);
    const notes: string[] = [];
    const spawned: number[] = [];
    const server = await launchServer(simSpec(dir, { command: [...race.prefix, process.execPath, BIN, 'simulate', '--port', '{port}', ...SIM_ARGS] }), {
      onNote: (line) => notes.push(line),
      onSpawn: (pid) => spawned.push(pid),
    });
    t.after(() => server.stop());
    // Normally two starts; a third only when another test's server took the second pick too (each is said).
    const ports = race.ports();
    assert.ok(ports.length >= 2 && new Set(ports).size === ports.length, String(ports));
    assert.equal(new URL(server.baseUrl).port, String(ports.at(-1)));
    assert.deepEqual(notes, ports.slice(0, -1).map(lostPortNote));
    assert.equal(spawned.length, ports.length);
    assert.equal(processAlive(spawned[0]!), false, 'the first attempt is stopped');
    assert.match(readFileSync(join(dir, 'server.log'), 'utf8'), /EADDRINUSE[\s\S]*servelab launch/, 'both attempts in the log');
  });

  test('a picked port another server takes and answers on before ours binds: the launch starts again on another port, the other server is left alone', async (t) => {
    const dir = tempDir(t);
    const race = firstStartLosesPort(dir, 'server');
    t.after(race.stopThief);
    const notes: string[] = [];
    const server = await launchServer(simSpec(dir, { command: [...race.prefix, process.execPath, BIN, 'simulate', '--port', '{port}', ...SIM_ARGS] }), {
      onNote: (line) => notes.push(line),
    });
    t.after(() => server.stop());
    const ports = race.ports();
    assert.ok(ports.length >= 2, String(ports));
    assert.equal(new URL(server.baseUrl).port, String(ports.at(-1)));
    assert.deepEqual(notes, ports.slice(0, -1).map(lostPortNote));
    assert.ok(processAlive(race.thiefPid()!), 'the server that took the port is not ours to stop');
    assert.match(readFileSync(join(dir, 'server.log'), 'utf8'), /EADDRINUSE/, "our first attempt's bind failure is in the log");
  });

  test('a fixed port taken between the check and the bind fails, without a retry that would only lose it again', async (t) => {
    const dir = tempDir(t);
    const race = firstStartLosesPort(dir);
    const port = await freePort('127.0.0.1');
    const notes: string[] = [];
    await assert.rejects(
      launchServer(simSpec(dir, { port, command: [...race.prefix, process.execPath, BIN, 'simulate', '--port', '{port}', ...SIM_ARGS] }), {
        onNote: (line) => notes.push(line),
      }),
      (error: unknown) => error instanceof NotReadyError && /address already in use/.test(error.message),
    );
    assert.deepEqual([race.ports(), notes], [[port], []]);
  });

  test('a port taken after the check: readiness sees that another process serves it and fails instead of measuring it', async (t) => {
    const dir = tempDir(t);
    // Our launched group (sh + sleep) never listens; a simulator in its own session takes the port, as a server
    // started by someone else between the pick and our bind would.
    const impostor = `setsid "${process.execPath}" "${BIN}" simulate --port "$1" --model impostor ${SIM_ARGS.join(' ')} & echo "IMPOSTOR=$!"; exec sleep 60`;
    const spec = simSpec(dir, { command: ['sh', '-c', impostor, 'sh', '{port}'] });
    let impostorPid = 0;
    t.after(() => {
      if (impostorPid > 0 && processAlive(impostorPid)) process.kill(impostorPid, 'SIGKILL');
    });
    await assert.rejects(launchServer(spec), (error: unknown) => {
      impostorPid = Number(/IMPOSTOR=(\d+)/.exec(readFileSync(spec.logPath, 'utf8'))?.[1]);
      assert.ok(error instanceof NotReadyError, String(error));
      assert.equal(error.kind, 'wrong-server');
      assert.match(error.message, new RegExp(`is served by pid ${impostorPid} \\(.*--model impostor.*\\), not by the launched server`));
      return true;
    });
    assert.ok(impostorPid > 0);
  });

  test('NCCL failures in the log fail readiness at once with the line, although the process stays up', async (t) => {
    const lines = [
      'gpu-box:4242:4301 [1] NCCL WARN Call to connect returned Connection refused, retrying',
      'torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5',
      '[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600094 milliseconds before timing out.',
    ];
    for (const [index, line] of lines.entries()) {
      const dir = tempDir(t);
      const started = Date.now();
      const spec = simSpec(dir, {
        command: ['sh', '-c', `echo 'INFO loading'; echo '${line}'; exec sleep 60`, 'sh', '{port}'],
        profile: BUILTIN_PROFILES.vllm!,
      });
      await assert.rejects(launchServer(spec), (error: unknown) => {
        assert.ok(error instanceof NotReadyError, String(error));
        assert.equal(error.kind, 'fatal-log');
        assert.match(error.message, index === 2 ? /NCCL timeout: .*Watchdog caught collective operation timeout/ : /NCCL error: /);
        assert.match(error.hint, /NCCL_DEBUG=INFO/);
        assert.ok(error.logTail?.includes(line), 'the line is in the log tail');
        return true;
      });
      assert.ok(Date.now() - started < 5_000, `failed at once, not at the timeout (${Date.now() - started} ms)`);
    }
  });

  test('listening sockets of a port are read from /proc/net/tcp{,6} text', () => {
    const table = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:4774 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 81234 1 0000000000000000 100 0 0 10 0',
      '   1: 0100007F:4774 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 81240 1 0000000000000000 20 4 30 10 -1',
      '   0: 00000000000000000000000000000000:4774 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  0  0 81250 1 0',
      '   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 90000 1 0000000000000000 100 0 0 10 0',
    ].join('\n');
    assert.deepEqual([...listeningInodes(table, 0x4774)], ['81234', '81250'], 'LISTEN only, IPv4 and IPv6');
    assert.deepEqual([...listeningInodes(table, 9999)], []);
  });

  test('listener owners: a container port proxy cannot be judged; the SSH owner reply is parsed', () => {
    assert.equal(isPortProxy({ pid: 1, cmdline: '/usr/bin/docker-proxy -proto tcp -host-ip 0.0.0.0 -host-port 8000' }), true);
    assert.equal(isPortProxy({ pid: 1, cmdline: 'rootlessport' }), true);
    assert.equal(isPortProxy({ pid: 1, cmdline: 'python -m vllm.entrypoints.openai.api_server --port 8000' }), false);
    assert.equal(isPortProxy({ pid: 1 }), false);
    assert.deepEqual(parseListenerOwner('other 4242 python -m sglang.launch_server --port 30000 \n'), {
      pid: 4242,
      cmdline: 'python -m sglang.launch_server --port 30000',
    });
    assert.deepEqual(parseListenerOwner('other 4242\n'), { pid: 4242 });
    assert.equal(parseListenerOwner('ours\n'), undefined);
    assert.equal(parseListenerOwner('unknown\n'), undefined);
  });

  test('bind failures and NCCL failures are fatal for every profile, built-in or user-defined', () => {
    const profiles = [...Object.values(BUILTIN_PROFILES), resolveProfile('mine', { mine: { healthPath: '/up' } })];
    const samples: Array<[string, string]> = [
      ["ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use", 'address already in use'],
      ['Error: listen EADDRINUSE: address already in use 127.0.0.1:18300', 'address already in use'],
      ["main: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080", 'address already in use'],
      ['Error: listen tcp 127.0.0.1:11434: bind: address already in use', 'address already in use'],
      ['ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.', 'NCCL error'],
      ['RuntimeError: NCCL error: unhandled cuda error', 'NCCL error'],
      ['[E ProcessGroupNCCL.cpp:475] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels', 'NCCL timeout'],
      ['torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.', 'NCCL timeout'],
    ];
    for (const profile of profiles) {
      for (const [line, name] of samples) {
        const found = classifyLogLine(profile, line);
        assert.equal(found?.kind === 'fatal' && found.name, name, `${profile.name}: ${line}`);
      }
      assert.equal(
        classifyLogLine(profile, 'gpu-box:4242:4242 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.5<0>'),
        undefined,
        `${profile.name}: NCCL INFO is no failure`,
      );
    }
  });
});
