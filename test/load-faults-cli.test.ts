/** `servelab bench` exit status against a server that misbehaves (support-fault-server.ts): a wrong number is exit 1. */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startFaultServer } from './support-fault-server.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function bench(t: TestContext, url: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'bin/servelab.js'),
      'bench',
      url,
      '--concurrency',
      '4',
      '--requests',
      '16',
      '--input-len',
      '8',
      '--output-len',
      '40',
      '--warmup',
      '0',
      '--no-progress',
      ...args,
    ],
    { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

describe('servelab bench against a faulty server', () => {
  test('zero output tokens: exit 1 saying so, never "ok"', async (t) => {
    const server = await startFaultServer(t, { outputShare: 0 });
    const run = await bench(t, server.url, ['--allow-failures']);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^servelab: the server generated no output tokens for 16 requests: nothing was measured\n {2}next: /);
  });

  test('stopping at 40% despite ignore_eos: the early-stop line, exit 1 unless accepted', async (t) => {
    const server = await startFaultServer(t, { outputShare: 0.4 });
    const strict = await bench(t, server.url, []);
    assert.equal(strict.code, 1, strict.stderr);
    assert.match(strict.stdout, /early-stop: 16\.0 of 40\.0 tokens per request \(16 requests stopped short\) at c=4/);
    assert.match(strict.stderr, /c=4: early-stop: .*\(--no-require-full-output accepts it\): these figures are not a valid measurement/);
    const accepted = await bench(t, server.url, ['--no-require-full-output']);
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stdout, /early-stop: 16\.0 of 40\.0 tokens per request/);
  });

  test('usage twice the stream: exit 1 with both numbers, exit 0 once a source is trusted', async (t) => {
    const server = await startFaultServer(t, { usageFactor: 2 });
    const strict = await bench(t, server.url, []);
    assert.equal(strict.code, 1, strict.stderr);
    assert.match(
      strict.stderr,
      /server usage 1,280 output tokens, the stream 640 token events \(16 of 16 requests\); their text has 640 words: say which source to trust with --token-counts/,
    );
    const trusted = await bench(t, server.url, ['--token-counts', 'stream']);
    assert.equal(trusted.code, 0, trusted.stderr);
    assert.match(trusted.stdout, /token counts: stream-chunks/);
    assert.match(trusted.stdout, /figures use stream-chunks \(trusted by choice\)/);
  });

  test('resets after reading the request: resends or failures shown, exit 1', async (t) => {
    const server = await startFaultServer(t, { resetEvery: 16 });
    const run = await bench(t, server.url, ['--requests', '48', '--output-len', '4', '--allow-failures', '--max-failed-fraction', '0']);
    assert.equal(run.code, 2, 'the two flags are alternatives');
    const strict = await bench(t, server.url, ['--requests', '48', '--output-len', '4']);
    assert.equal(strict.code, 1, strict.stderr);
    assert.match(strict.stderr, /(sent again after their connection closed under them|requests failed)/);
  });
});
