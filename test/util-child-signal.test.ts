/**
 * Signalling a child whose program is missing must never reach pid 0: Node 20's `child.kill()`, called before the
 * spawn error is delivered, sends the signal to the caller's whole process group (kill(0, SIGKILL), seen with strace
 * in a full test run whose every process then died). Each case runs in a process group of its own, so a regression
 * kills only that group and shows as its exit by SIGKILL.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from './support-experiment.js';

const moduleUrl = (path: string): string => new URL(`../src/${path}`, import.meta.url).href;

/** Run `source` (an ES module) as the leader of a new process group; its exit and output. */
function inOwnGroup(source: string, env: Record<string, string> = {}): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', source], {
      detached: true,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout }));
  });
}

test('a child whose program is missing, signalled in the same tick as its spawn: no signal sent, the caller lives', async () => {
  const result = await inOwnGroup(`
    import { spawn } from 'node:child_process';
    import { signalChild } from ${JSON.stringify(moduleUrl('util/child-signal.js'))};
    const child = spawn('servelab-no-such-program', [], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.on('error', () => {});
    const sent = signalChild(child, 'SIGKILL');
    setTimeout(() => console.log('alive, sent ' + sent + ', later ' + signalChild(child, 'SIGKILL')), 200);
  `);
  assert.deepEqual(result, { code: 0, signal: null, stdout: 'alive, sent false, later false\n' });
});

test('the GPU stream on a machine without nvidia-smi, stopped at once: says why, signals nobody', async (t) => {
  const emptyPath = tempDir(t, 'no-nvidia-smi');
  const result = await inOwnGroup(
    `
    import { streamGpuSamples } from ${JSON.stringify(moduleUrl('telemetry/stream.js'))};
    const stream = streamGpuSamples(100, () => {});
    console.log(await stream.stop());
  `,
    { PATH: emptyPath },
  );
  assert.deepEqual(result, { code: 0, signal: null, stdout: 'nvidia-smi not found\n' });
});

test('src signals child processes only through signalChild', () => {
  const srcDir = fileURLToPath(new URL('../../src/', import.meta.url));
  const offenders: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && entry.name !== 'child-signal.ts') {
        readFileSync(path, 'utf8')
          .split('\n')
          .forEach((line, index) => {
            if (/\.kill\(/.test(line.replaceAll('process.kill(', ''))) offenders.push(`${path}:${index + 1}: ${line.trim()}`);
          });
      }
    }
  };
  walk(srcDir);
  assert.deepEqual(offenders, []);
});
