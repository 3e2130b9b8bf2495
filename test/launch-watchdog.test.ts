/**
 * The local launch watchdog (src/launch/watchdog.ts) on real processes: a launcher killed with SIGKILL takes its
 * server with it; a detached server outlives its launcher; a stopped server lets its launcher exit on its own.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { groupAlive, signalGroup } from '../src/launch/process-group.js';
import { pollFor, waitFor } from './support-wait.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const LAUNCH = new URL('../src/launch/launch.js', import.meta.url).href;
const PROFILES = new URL('../src/profiles/builtin.js', import.meta.url).href;
const WATCHDOG = new URL('../src/launch/watchdog.js', import.meta.url).href;

/** A launcher process: starts a simulator, prints "ready PID", then waits to be killed, detaches or stops it. */
function launcherScript(logPath: string, mode: 'wait' | 'detach' | 'stop'): string {
  return `
import { launchServer } from ${JSON.stringify(LAUNCH)};
import { BUILTIN_PROFILES } from ${JSON.stringify(PROFILES)};
const server = await launchServer({
  command: [process.execPath, ${JSON.stringify(BIN)}, 'simulate', '--port', '{port}', '--load-ms', '0', '--jitter', '0'],
  env: {}, profile: BUILTIN_PROFILES.simulator, logPath: ${JSON.stringify(logPath)}, readyTimeoutMs: 30000,
});
process.stdout.write('ready ' + server.pid + '\\n');
if (${JSON.stringify(mode)} === 'detach') { server.detach(); process.exit(0); }
if (${JSON.stringify(mode)} === 'stop') await server.stop();
else setInterval(() => {}, 1000);
`;
}

async function startLauncher(t: TestContext, mode: 'wait' | 'detach' | 'stop') {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-watchdog-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const logPath = join(dir, 'server.log');
  const script = join(dir, 'launcher.mjs');
  writeFileSync(script, launcherScript(logPath, mode));
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.after(() => child.kill('SIGKILL'));
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  const serverPid = await pollFor('the launched server', () => /ready (\d+)/.exec(stdout)?.[1], 30_000);
  const pid = Number(serverPid);
  t.after(() => {
    if (groupAlive(pid)) signalGroup(pid, 'SIGKILL');
  });
  return { child, pid, exited, logPath };
}

/** Pids of live processes whose command line holds `tag`. */
function taggedProcesses(tag: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((name) => {
      try {
        return readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').includes(tag);
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('launch watchdog', { timeout: 90_000 }, () => {
  test('a launcher killed with SIGKILL: its server is stopped by the watchdog at once', async (t) => {
    const launcher = await startLauncher(t, 'wait');
    assert.ok(groupAlive(launcher.pid));
    launcher.child.kill('SIGKILL');
    await launcher.exited;
    // The simulator honours SIGTERM: gone well within the watchdog's grace period.
    assert.ok(await waitFor(() => !groupAlive(launcher.pid), 10_000), 'server still running after its launcher was killed');
    assert.match(readFileSync(launcher.logPath, 'utf8'), new RegExp(`the process that launched this server \\(pid ${launcher.child.pid}\\) is gone`));
  });

  test('a server that ignores SIGTERM gets SIGKILL once the grace period is over', async (t) => {
    // A process group ignoring SIGTERM, as a server stuck in shutdown: what a second Ctrl-C used to leave behind.
    const script = `import { spawnGuarded } from ${JSON.stringify(WATCHDOG)};
const { child } = spawnGuarded(['/bin/sh', '-c', 'trap "" TERM; sleep 60 & wait'], { env: { PATH: process.env.PATH }, logFd: 2, graceMs: 300 });
process.stdout.write('watching ' + child.pid + '\\n');
setInterval(() => {}, 1000);`;
    const launcher = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => launcher.kill('SIGKILL'));
    let stdout = '';
    launcher.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    const pgid = Number(await pollFor('the watchdog', () => /watching (\d+)/.exec(stdout)?.[1], 20_000));
    t.after(() => {
      if (groupAlive(pgid)) signalGroup(pgid, 'SIGKILL');
    });
    launcher.kill('SIGKILL');
    assert.ok(await waitFor(() => !groupAlive(pgid), 10_000), 'the SIGTERM-ignoring group survived its launcher');
  });

  test('a detached server outlives its launcher', async (t) => {
    const launcher = await startLauncher(t, 'detach');
    assert.equal(await launcher.exited, 0);
    // The watchdog would act within milliseconds of the launcher's exit; give it ample time to (wrongly) do so.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.ok(groupAlive(launcher.pid), 'detached server was stopped');
  });

  test('a launcher that stopped its server exits on its own: the watchdog holds no handle', async (t) => {
    const launcher = await startLauncher(t, 'stop');
    assert.equal(await launcher.exited, 0);
    assert.equal(groupAlive(launcher.pid), false);
  });

  // Issue 33: ~70 runners killed around a server spawn left 2 orphans, killed between the server's spawn and its
  // watchdog's. The launcher here kills itself with SIGKILL at chosen instants after the server's child_process.spawn
  // returns: at once, synchronously (the old window: the watchdog was spawned next), and 0, 2, 10 and 50 ms later.
  test('a launcher SIGKILLed at any instant around the spawn leaves no server behind', {
    skip: !existsSync('/proc/self/cmdline') && 'needs /proc',
  }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-spawn-kill-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const instants = [-1, 0, 2, 10, 50].map((delayMs) => ({ delayMs }));
    for (const [index, instant] of instants.entries()) {
      const tag = `servelab-orphan-probe-${process.pid}-${index}`;
      const script = `
import cp from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import { launchServer } from ${JSON.stringify(LAUNCH)};
import { BUILTIN_PROFILES } from ${JSON.stringify(PROFILES)};
const spawn = cp.spawn;
let spawns = 0;
cp.spawn = function (...args) {
  const child = spawn.apply(this, args);
  if (++spawns === 1) {
    if (${instant.delayMs} < 0) process.kill(process.pid, 'SIGKILL');
    else setTimeout(() => process.kill(process.pid, 'SIGKILL'), ${instant.delayMs});
  }
  return child;
};
syncBuiltinESMExports();
await launchServer({
  command: [process.execPath, '-e', 'setInterval(() => {}, 1000)', ${JSON.stringify(tag)}, '{port}'],
  env: {}, profile: BUILTIN_PROFILES.simulator, logPath: ${JSON.stringify(join(dir, `server-${index}.log`))}, readyTimeoutMs: 5000,
});
`;
      const launcher = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
      t.after(() => launcher.kill('SIGKILL'));
      const [, signal] = (await once(launcher, 'exit')) as [number | null, string | null];
      assert.equal(signal, 'SIGKILL', `instant ${JSON.stringify(instant)}: the launcher was not killed`);
      const left = await waitFor(() => taggedProcesses(tag).length === 0, 5_000);
      for (const pid of taggedProcesses(tag)) process.kill(pid, 'SIGKILL');
      assert.ok(left, `instant ${JSON.stringify(instant)}: the server outlived its launcher`);
    }
  });
});

test('a stop does not wait for the watchdog zombie: the group of an exited server and its reaped-late watchdog is gone', async () => {
  // The watchdog subshell's parent is the server it exec'd; once both are gone the subshell is a zombie until init
  // reaps it (1.3 s a stop on the dev box before groupAlive read /proc: 2 s a restart in a campaign).
  const { spawnGuarded } = (await import(WATCHDOG)) as typeof import('../src/launch/watchdog.js');
  const { stopGroup } = await import('../src/launch/process-group.js');
  const dir = mkdtempSync(join(tmpdir(), 'servelab-zombie-'));
  try {
    const { openSync, closeSync } = await import('node:fs');
    const logFd = openSync(join(dir, 'server.log'), 'w');
    const guarded = spawnGuarded([process.execPath, '-e', 'setInterval(() => {}, 1000)'], { env: { PATH: process.env.PATH ?? '' }, logFd, graceMs: 10_000 });
    closeSync(logFd);
    assert.ok(!('missing' in guarded));
    await guarded.execed();
    const pid = guarded.child.pid!;
    const started = Date.now();
    await stopGroup(pid, 10_000);
    assert.ok(Date.now() - started < 500, `stopped in ${Date.now() - started} ms`);
    assert.equal(groupAlive(pid), false);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
