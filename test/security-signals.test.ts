import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { SERVELAB, tempDir } from './support-experiment.js';
import { listening, waitFor } from './support-wait.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** `servelab ARGS` with stdout a pipe; closeStdout closes our end at once (the reader went away, as `| head` does). */
function start(args: string[], store: string, closeStdout: boolean) {
  const child = spawn(process.execPath, [SERVELAB, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, SERVELAB_STORE: store } });
  if (closeStdout) child.stdout.destroy();
  let stdout = '';
  let stderr = '';
  if (!closeStdout) child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, exited, output: () => ({ stdout, stderr }) };
}

const simulator = (port: number): string[] => ['--', process.execPath, SERVELAB, 'simulate', '--port', String(port), '--load-ms', '100'];

test('a closed stdout (| head) or a hangup stops the server, with no stack trace', { timeout: 90_000 }, async (t) => {
  const dir = tempDir(t, 'signals');
  const store = join(dir, 'servelab.db');

  const help = start(['launch', '--help'], store, true);
  assert.equal(await help.exited, 0);
  assert.doesNotMatch(help.output().stderr, /EPIPE|\n\s+at /);

  // The ready line goes to a closed pipe: the launch stops its server and exits without a trace.
  const piped = await freePort();
  const launch = start(['launch', '--json', '--port', String(piped), ...simulator(piped)], store, true);
  assert.ok(await waitFor(() => launch.output().stderr.includes('ready') || launch.child.exitCode !== null, 30_000), launch.output().stderr);
  const code = await Promise.race([launch.exited, delay(20_000).then(() => 'hung')]);
  assert.notEqual(code, 'hung', launch.output().stderr);
  assert.doesNotMatch(launch.output().stderr, /EPIPE|\n\s+at /);
  assert.equal(await listening(piped), false, 'the server was stopped');

  // SIGHUP (the terminal closed) while serving in the foreground.
  const hung = await freePort();
  const foreground = start(['launch', '--port', String(hung), ...simulator(hung)], store, false);
  assert.ok(await waitFor(() => foreground.output().stderr.includes('serving;'), 30_000), foreground.output().stderr);
  assert.equal(await listening(hung), true);
  foreground.child.kill('SIGHUP');
  const hupCode = await Promise.race([foreground.exited, delay(20_000).then(() => 'hung')]);
  assert.notEqual(hupCode, 'hung');
  assert.doesNotMatch(foreground.output().stderr, /\n\s+at /);
  assert.equal(await listening(hung), false, 'the server was stopped');
});

test('bad numbers and a directory as --log are one-line usage errors before anything starts', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'bounds');
  const store = join(dir, 'servelab.db');
  const cases: Array<[string[], RegExp]> = [
    [['bench', 'http://127.0.0.1:9', '--rate', '1e-9'], /--rate: expected at least 0\.001, got 1e-9/],
    [['bench', 'http://127.0.0.1:9', '--warmup', '-1'], /--warmup must be a positive integer/],
    [['bench', 'http://127.0.0.1:9', '--input-len', '1000000000000'], /at most 10000000 tokens/],
    [['launch', '--log', dir, '--', process.execPath, SERVELAB, 'simulate', '--port', '{port}'], /cannot write the server log .*EISDIR/],
  ];
  for (const [args, pattern] of cases) {
    const run = start(args, store, false);
    const code = await run.exited;
    const { stderr } = run.output();
    assert.notEqual(code, 0, args.join(' '));
    assert.match(stderr, pattern);
    assert.match(stderr, /\n {2}next: /);
    assert.doesNotMatch(stderr, /\n\s+at /);
  }
});
