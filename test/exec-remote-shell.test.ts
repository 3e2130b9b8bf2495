import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { benchArgv, lengthSpec, parseBenchResult, remoteBaseUrl } from '../src/exec/remote-bench.js';
import {
  parseEnviron,
  parseHostPorts,
  parsePollReply,
  parseStarted,
  pollScript,
  remotePathWord,
  shellJoin,
  shellQuote,
  startDetachedScript,
  stopScript,
} from '../src/exec/remote-shell.js';
import { reconnectDelayMs, sshArgs } from '../src/exec/ssh-transport.js';
import { parseEphemeralRange, pickFreePort, serverPortRange } from '../src/launch/port-range.js';
import { groupAlive } from '../src/launch/process-group.js';
import { parseLengthSpec } from '../src/load/config.js';
import type { BenchOptions } from '../src/load/types.js';
import { waitFor } from './support-wait.js';

/** Run a script with the system sh, as the remote host would (sh -s, script on stdin). */
function sh(script: string): { code: number | null; stdout: Buffer; stderr: string } {
  const result = spawnSync('sh', ['-s'], { input: script, timeout: 30_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr.toString() };
}

describe('shell quoting', () => {
  test('round-trips awkward words through a real shell', () => {
    const words = ['plain', 'with space', "it's", '$HOME', '`id`', 'a"b', '', 'new\nline', '--flag={"x": 1}', '*'];
    const out = sh(`printf '%s\\0' ${shellJoin(words)}`).stdout.toString();
    assert.deepEqual(out.split('\0').slice(0, -1), words);
  });

  test('leaves safe words readable', () => {
    assert.equal(shellQuote('/usr/bin/node'), '/usr/bin/node');
    assert.equal(shellQuote('--port=8000'), '--port=8000');
  });

  test('expands a leading ~/ to $HOME but quotes the rest', () => {
    const out = sh(`printf '%s' ${remotePathWord("~/dir with 'q'")}`).stdout.toString();
    assert.equal(out, `${process.env.HOME}/dir with 'q'`);
  });
});

describe('detached job scripts (run with the local sh)', () => {
  test('start, poll log increments, exit status, and environment', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-job-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const started = sh(
      startDetachedScript({
        dir: join(dir, 'job'),
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template.
        command: ['sh', '-c', 'echo "one $GREETING"; echo "unset=${DROPPED:-none}"; sleep 0.3; echo two; exit 7'],
        env: { GREETING: "hello 'world'" },
        unsetEnv: ['DROPPED'],
        heartbeatTimeoutMinutes: 5,
      }),
    );
    assert.equal(started.code, 0, started.stderr);
    const ids = parseStarted(started.stdout.toString());
    assert.ok(ids, started.stdout.toString());

    let offset = 0;
    let log = '';
    let state;
    for (let i = 0; i < 200; i++) {
      const reply = parsePollReply(sh(pollScript(join(dir, 'job'), offset, 1 << 20)).stdout);
      assert.ok(reply);
      offset += reply.logBytes.length;
      log += reply.logBytes.toString();
      state = reply.state;
      if (state.kind === 'exited') break;
      await delay(50);
    }
    assert.deepEqual(state, { kind: 'exited', code: 7 });
    assert.equal(log, "one hello 'world'\nunset=none\ntwo\n");
    assert.equal(offset, Buffer.byteLength(log));
    assert.ok(await waitFor(() => !groupAlive(ids.pgid), 10_000), 'supervisor and watchdog are gone after the job exits');
  });

  test('no argument or env value can end the generated script early (old heredoc terminators, quotes, $(…))', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-job-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const hostile = ['x\nSERVELAB_RUN_EOF\ntouch pwned-run\n', "'\nSERVELAB_SUPERVISE_EOF\ntouch pwned-sup", '$(touch pwned-subst)', '`touch pwned-tick`'];
    const started = sh(
      startDetachedScript({
        dir: join(dir, 'job'),
        command: ['sh', '-c', 'printf "%s|" "$@"; printf "%s|" "$V"', 'sh', ...hostile],
        env: { V: 'v\nSERVELAB_RUN_EOF\ntouch pwned-env' },
        heartbeatTimeoutMinutes: 5,
      }),
    );
    assert.equal(started.code, 0, started.stderr);
    let reply;
    for (let i = 0; i < 200; i++) {
      reply = parsePollReply(sh(pollScript(join(dir, 'job'), 0, 1 << 20)).stdout);
      if (reply?.state.kind === 'exited') break;
      await delay(50);
    }
    assert.deepEqual(reply?.state, { kind: 'exited', code: 0 });
    assert.equal(reply.logBytes.toString(), `${hostile.join('|')}|v\nSERVELAB_RUN_EOF\ntouch pwned-env|`);
    for (const name of ['pwned-run', 'pwned-sup', 'pwned-subst', 'pwned-tick', 'pwned-env']) assert.ok(!existsSync(join(dir, 'job', name)), name);
  });

  test('stop ends the whole process group, including children of the server', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-job-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const jobDir = join(dir, 'job');
    // A server that ignores SIGTERM and has a child: only the group KILL after the grace period ends both.
    const started = sh(
      startDetachedScript({
        dir: jobDir,
        command: ['sh', '-c', "trap '' TERM; sleep 300 & echo child $!; while :; do sleep 1; done"],
        env: {},
        heartbeatTimeoutMinutes: 5,
      }),
    );
    const ids = parseStarted(started.stdout.toString());
    assert.ok(ids);
    t.after(() => {
      if (groupAlive(ids.pgid)) process.kill(-ids.pgid, 'SIGKILL');
    });
    assert.ok(groupAlive(ids.pgid));
    const stopped = sh(stopScript(jobDir, 0.5));
    assert.equal(stopped.stdout.toString().trim(), 'stopped-kill');
    assert.equal(groupAlive(ids.pgid), false);
    const reply = parsePollReply(sh(pollScript(jobDir, 0, 1024)).stdout);
    assert.equal(reply?.state.kind, 'gone');
    // Stopping twice is harmless (a retried stop after a dropped connection).
    assert.equal(sh(stopScript(jobDir, 0.5)).stdout.toString().trim(), 'stopped');
  });

  test('the watchdog stops a job nobody polls any more', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-job-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const jobDir = join(dir, 'job');
    const started = sh(startDetachedScript({ dir: jobDir, command: ['sleep', '300'], env: {}, heartbeatTimeoutMinutes: 1 }));
    const ids = parseStarted(started.stdout.toString());
    assert.ok(ids);
    t.after(() => {
      if (groupAlive(ids.pgid)) process.kill(-ids.pgid, 'SIGKILL');
    });
    // Age the heartbeat instead of waiting minutes: the watchdog checks every 5 s.
    spawnSync('touch', ['-d', '10 minutes ago', join(jobDir, 'heartbeat')]);
    assert.ok(await waitFor(() => !groupAlive(ids.pgid), 20_000), 'watchdog stopped the job');
    assert.match(readFileSync(join(jobDir, 'out.log'), 'utf8'), /nobody has polled this job/);
  });

  test('starting again in the same directory (a retry after a dropped connection) does not start a second copy', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-job-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const job = { dir: join(dir, 'job'), command: ['sleep', '300'], env: {}, heartbeatTimeoutMinutes: 5 };
    const first = parseStarted(sh(startDetachedScript(job)).stdout.toString());
    assert.ok(first);
    t.after(() => {
      if (groupAlive(first.pgid)) process.kill(-first.pgid, 'SIGKILL');
    });
    const second = parseStarted(sh(startDetachedScript(job)).stdout.toString());
    assert.deepEqual(second, first);
    assert.equal(sh(stopScript(job.dir, 2)).stdout.toString().trim(), 'stopped');
    assert.equal(groupAlive(first.pgid), false);
  });

  test('a poll of a job directory that does not exist says so', () => {
    const reply = parsePollReply(sh(pollScript('/nonexistent/servelab-job', 0, 10)).stdout);
    assert.deepEqual(reply?.state, { kind: 'missing' });
  });

  test('rejects environment names a shell cannot carry', () => {
    assert.throws(() => startDetachedScript({ dir: '/tmp/x', command: ['true'], env: { 'BAD-NAME': '1' }, heartbeatTimeoutMinutes: 1 }));
  });
});

describe('parsers', () => {
  test('poll reply: incomplete output is not a reply', () => {
    assert.equal(parsePollReply(Buffer.from('state alive\nsize 10\n')), undefined);
    assert.equal(parsePollReply(Buffer.from('garbage')), undefined);
    const reply = parsePollReply(Buffer.from('state exited 3\nsize 5\n--\nab\n--\n'));
    assert.deepEqual(reply?.state, { kind: 'exited', code: 3 });
    assert.equal(reply?.logBytes.toString(), 'ab\n--\n');
  });

  test('ports from /proc/net/tcp{,6} and the ephemeral range; a free pick avoids every held port and that range', () => {
    const text = [
      '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
      '   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0',
      '   1: 0100007F:4E20 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0 20 4 30 10 -1',
      '   0: 00000000000000000000000001000000:4E21 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 3',
      '32768\t60999',
    ].join('\n');
    const ports = parseHostPorts(text);
    assert.deepEqual(
      [...ports.listening].sort((a, b) => a - b),
      [8080, 20001],
    );
    assert.deepEqual(
      [...ports.inUse].sort((a, b) => a - b),
      [8080, 20000, 20001],
      'a connected socket holds its port too',
    );
    assert.deepEqual(ports.ephemeral, { low: 32768, high: 60999 });
    const range = serverPortRange(ports.ephemeral);
    assert.deepEqual(range, { low: 20000, high: 32767 });
    assert.equal(
      pickFreePort(ports.inUse, () => 0, range),
      20002,
    );
    assert.equal(
      pickFreePort(ports.inUse, () => 0.99999, range),
      32767,
    );
  });

  test('server port range: below the ephemeral range, above it where it starts low, anywhere where it spans all', () => {
    assert.deepEqual(serverPortRange(), { low: 20000, high: 32767 }, "Linux's default where the host's is unknown");
    assert.deepEqual(serverPortRange({ low: 1024, high: 50000 }), { low: 50001, high: 65535 });
    assert.deepEqual(serverPortRange({ low: 1024, high: 65535 }), { low: 20000, high: 65535 });
    assert.equal(parseEphemeralRange('60999 32768'), undefined);
    assert.equal(parseEphemeralRange('not a range'), undefined);
  });

  test('environ', () => {
    assert.deepEqual(parseEnviron(Buffer.from('A=1\0B=x=y\0\0')), { A: '1', B: 'x=y' });
  });
});

describe('ssh command line', () => {
  test('carries port, key, options and a private control path; never prompts', () => {
    const args = sshArgs({ host: 'gpu', port: 2222, identityFile: '/k', sshOptions: ['ProxyJump=bastion'] }, '/tmp/x/cm');
    assert.deepEqual(args.slice(0, 2), ['-o', 'ControlPath=/tmp/x/cm']);
    assert.ok(args.includes('BatchMode=yes'));
    assert.deepEqual(args.slice(args.indexOf('-p'), args.indexOf('-p') + 2), ['-p', '2222']);
    assert.deepEqual(args.slice(args.indexOf('-i'), args.indexOf('-i') + 2), ['-i', '/k']);
    assert.deepEqual(args.slice(-2), ['-o', 'ProxyJump=bastion']);
  });

  test('reconnect backoff grows and is capped', () => {
    assert.deepEqual([0, 1, 2, 5, 10].map(reconnectDelayMs), [500, 1000, 2000, 10_000, 10_000]);
  });
});

describe('remote load client arguments', () => {
  const base: BenchOptions = {
    baseUrl: 'http://127.0.0.1:40000',
    backend: 'openai-chat',
    model: 'm',
    workload: { kind: 'sweep', concurrencies: [1, 4], requestsPerLevel: 16 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'normal', mean: 100, stddev: 10, min: 5 }, outputTokens: { kind: 'fixed', value: 32 }, seed: 3 },
    warmupRequests: 2,
    ignoreEos: false,
    requestTimeoutMs: 60_000,
    slo: { ttftMs: 200 },
    specMetrics: 'none',
  };

  test('reproduce the options as servelab bench flags', () => {
    const argv = benchArgv(base, 'http://127.0.0.1:8000', 'result.json');
    const flag = (name: string) => argv[argv.indexOf(name) + 1];
    assert.deepEqual(argv.slice(0, 2), ['bench', 'http://127.0.0.1:8000']);
    assert.equal(flag('--backend'), 'openai-chat');
    assert.equal(flag('--concurrency'), '1,4');
    assert.equal(flag('--requests'), '16');
    assert.equal(flag('--output-len'), '32');
    assert.equal(flag('--seed'), '3');
    assert.equal(flag('--request-timeout'), '60000ms');
    assert.equal(flag('--slo-ttft-ms'), '200');
    assert.equal(flag('--out'), 'result.json');
    assert.ok(argv.includes('--no-ignore-eos') && argv.includes('--no-spec-metrics') && argv.includes('--json'));
  });

  test('length specs parse back to the same distributions', () => {
    for (const distribution of [
      { kind: 'fixed', value: 7 },
      { kind: 'uniform', min: 2, max: 9 },
      { kind: 'normal', mean: 100, stddev: 10 },
      { kind: 'normal', mean: 100, stddev: 10, min: 5, max: 300 },
    ] as const) {
      assert.deepEqual(parseLengthSpec(lengthSpec(distribution)), distribution);
    }
  });

  test('rate and dataset workloads', () => {
    const argv = benchArgv(
      {
        ...base,
        workload: { kind: 'rate', requestsPerSecond: 2.5, arrival: 'constant', maxInFlight: 8, requests: 40 },
        prompts: { kind: 'jsonl', path: '/data/p.jsonl', maxOutputTokens: 64 },
      },
      'http://h:1',
      'r.json',
    );
    assert.ok(argv.join(' ').includes('--rate 2.5 --arrival constant --max-in-flight 8 --requests 40'));
    assert.ok(argv.join(' ').includes('--dataset /data/p.jsonl --dataset-format jsonl --max-output-len 64'));
  });

  test('remote URL keeps the path and swaps the forward for the host port', () => {
    assert.equal(remoteBaseUrl('http://127.0.0.1:41234/v1', { host: '127.0.0.1', port: 8000 }), 'http://127.0.0.1:8000/v1');
    assert.equal(remoteBaseUrl('http://127.0.0.1:41234', { host: '::1', port: 8000 }), 'http://[::1]:8000');
  });

  test('result validation', () => {
    assert.equal(parseBenchResult('{"schemaVersion":2}'), undefined);
    assert.equal(parseBenchResult('not json'), undefined);
    assert.ok(parseBenchResult('{"schemaVersion":1,"levels":[],"interrupted":false}'));
  });
});

test('helper files are written where the start script says', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-job-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'marker'), '');
  const started = sh(startDetachedScript({ dir: join(dir, 'j'), command: ['true'], env: {}, cwd: dir, heartbeatTimeoutMinutes: 1 }));
  assert.equal(started.code, 0, started.stderr);
  for (const file of ['run.sh', 'supervise.sh', 'pid', 'pgid', 'heartbeat', 'out.log']) assert.ok(existsSync(join(dir, 'j', file)), file);
});
