/**
 * The local launch watchdog (src/launch/watchdog.ts) on real processes: a launcher killed with SIGKILL takes its
 * server with it; a detached server outlives its launcher; a stopped server lets its launcher exit on its own.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    const stubborn = spawn('/bin/sh', ['-c', 'trap "" TERM; sleep 60 & wait'], { detached: true, stdio: 'ignore' });
    const pgid = stubborn.pid!;
    t.after(() => {
      if (groupAlive(pgid)) signalGroup(pgid, 'SIGKILL');
    });
    const script = `import { startWatchdog } from ${JSON.stringify(WATCHDOG)};
startWatchdog(${pgid}, 2, 300);
process.stdout.write('watching\\n');
setInterval(() => {}, 1000);`;
    const launcher = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => launcher.kill('SIGKILL'));
    let stdout = '';
    launcher.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    await pollFor('the watchdog', () => (stdout.includes('watching') ? true : undefined), 20_000);
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
});
