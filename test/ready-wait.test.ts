import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type RequestListener } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/launch/port.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { NotReadyError } from '../src/ready/errors.js';
import { waitForReady } from '../src/ready/wait.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const openai = BUILTIN_PROFILES.openai!;

/** The simulator as a real child process; resolves with its URL (printed at once, before loading). */
async function startSimulator(t: TestContext, args: string[]): Promise<string> {
  const child = spawn(process.execPath, [BIN, 'simulate', '--port', '0', '--jitter', '0', '--ttft-ms', '1', '--tpot-ms', '1', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  t.after(() => {
    child.kill('SIGKILL');
  });
  const lines = createInterface({ input: child.stdout! });
  const found = new Promise<string>((resolve, reject) => {
    lines.on('line', (line) => {
      const match = /listening on (http:\/\/\S+);/.exec(line);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`simulator exited early with code ${code}`)));
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  try {
    return await found;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Resolves once the simulator is in `state` (/sim/state): a wait with a short timeout then starts from the state it
 * is about, however long a loaded machine took to start the simulator.
 */
async function simState(url: string, state: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const now = (await (await fetch(`${url}/sim/state`)).json()) as { state: string };
    if (now.state === state) return;
    if (Date.now() > deadline) assert.fail(`simulator still ${now.state}, not ${state}`);
    await delay(25);
  }
}

/** A tiny HTTP server standing in for the wrong thing at the URL. */
async function startHttp(t: TestContext, handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const address = server.address() as { port: number };
  return `http://127.0.0.1:${address.port}`;
}

async function notReady(promise: Promise<unknown>): Promise<NotReadyError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof NotReadyError, `expected NotReadyError, got ${String(error)}`);
    return error;
  }
  assert.fail('expected the wait to fail');
}

describe('waitForReady against the simulator', () => {
  test('reports ready only once health, models and one generation pass', async (t) => {
    const url = await startSimulator(t, ['--load-ms', '1500']);
    const progress: string[] = [];
    const result = await waitForReady({ baseUrl: url, profile: openai, timeoutMs: 30_000, onProgress: (p) => progress.push(p.phase) });
    assert.deepEqual(result.checks, ['health', 'models', 'generation']);
    assert.equal(result.model, 'sim-llama-8b');
    assert.ok(progress.includes('waiting for health'), `phases seen: ${progress.join(', ')}`);
    assert.ok(result.phases.every((phase) => phase.durationMs >= 0));
  });

  test('health ok but not serving (no model, generation 503) is not ready: times out naming why', async (t) => {
    const url = await startSimulator(t, ['--load-ms', '50', '--fail', 'not-serving']);
    await simState(url, 'not-serving');
    const error = await notReady(waitForReady({ baseUrl: url, profile: openai, timeoutMs: 4_000 }));
    assert.equal(error.kind, 'timeout');
    assert.equal(error.exitCode, 3);
    assert.match(error.message, /checking models.*lists no model/);
  });

  test('a server that hangs while loading times out with its last health answer', async (t) => {
    const url = await startSimulator(t, ['--load-ms', '60000', '--fail', 'hang', '--fail-at-ms', '10']);
    await simState(url, 'hung');
    const error = await notReady(waitForReady({ baseUrl: url, profile: openai, timeoutMs: 2_000 }));
    assert.equal(error.kind, 'timeout');
    assert.match(error.message, /not ready after 2\.0s: waiting for health \(503: loading\)/);
  });

  test('with verification off, a healthy server is ready on health alone', async (t) => {
    const url = await startSimulator(t, ['--load-ms', '50', '--fail', 'not-serving']);
    const result = await waitForReady({ baseUrl: url, profile: openai, timeoutMs: 30_000, verifyServing: false });
    assert.deepEqual(result.checks, ['health']);
  });
});

describe('waitForReady against the wrong thing', () => {
  test('connection refused keeps polling until the timeout, then says nothing was listening', async () => {
    const port = await freePort('127.0.0.1');
    const started = Date.now();
    const error = await notReady(waitForReady({ baseUrl: `http://127.0.0.1:${port}`, profile: openai, timeoutMs: 600 }));
    assert.equal(error.kind, 'timeout');
    assert.match(error.message, /waiting for server \(connection refused/);
    assert.ok(Date.now() - started >= 550);
  });

  test('an HTML page on /health fails at once, naming what answered', async (t) => {
    const url = await startHttp(t, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><head><title>Grafana</title></head><body></body></html>');
    });
    const started = Date.now();
    const error = await notReady(waitForReady({ baseUrl: url, profile: openai, timeoutMs: 30_000 }));
    assert.equal(error.kind, 'bad-response');
    assert.equal(error.exitCode, 1);
    assert.match(error.message, /\/health: .*HTML page titled "Grafana"/);
    assert.ok(Date.now() - started < 10_000, 'failed fast instead of waiting for the timeout');
  });

  test('a healthy server that is not OpenAI-compatible fails at /v1/models with what it said', async (t) => {
    const url = await startHttp(t, (req, res) => {
      if (req.url === '/health') res.writeHead(200).end('{"status":"ok"}');
      else res.writeHead(200, { 'content-type': 'application/json' }).end('{"models":[{"name":"llama3"}]}');
    });
    const error = await notReady(waitForReady({ baseUrl: url, profile: openai, timeoutMs: 30_000 }));
    assert.equal(error.kind, 'bad-response');
    assert.match(error.message, /\/v1\/models: .*"models".*not an OpenAI model list/);
    assert.match(error.hint, /--no-verify/);
  });

  test('"not ok" in a health body is not ready (no substring matching)', async (t) => {
    const url = await startHttp(t, (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"not ok"}'));
    const error = await notReady(waitForReady({ baseUrl: url, profile: openai, timeoutMs: 500 }));
    assert.equal(error.kind, 'timeout');
    assert.match(error.message, /status "not ok"/);
  });

  test('a chat-only server passes through the /v1/chat/completions fallback', async (t) => {
    const url = await startHttp(t, (req, res) => {
      if (req.url === '/health') return void res.writeHead(200).end();
      if (req.url === '/v1/models') return void res.writeHead(200).end('{"object":"list","data":[{"id":"chatty"}]}');
      if (req.url === '/v1/chat/completions') return void res.writeHead(200).end('{"choices":[{"message":{"content":"Hi"}}]}');
      res.writeHead(404).end('{"error":{"message":"Not Found"}}');
    });
    const result = await waitForReady({ baseUrl: url, profile: openai, timeoutMs: 30_000 });
    assert.equal(result.model, 'chatty');
  });

  test('a zero-token answer (text "", completion_tokens 0) is not ready: the timeout says so', async (t) => {
    const url = await startHttp(t, (req, res) => {
      if (req.url === '/health') return void res.writeHead(200).end();
      if (req.url === '/v1/models') return void res.writeHead(200).end('{"object":"list","data":[{"id":"m"}]}');
      res.writeHead(200).end('{"choices":[{"text":"","finish_reason":"length"}],"usage":{"prompt_tokens":2,"completion_tokens":0}}');
    });
    const error = await notReady(waitForReady({ baseUrl: url, profile: openai, timeoutMs: 800 }));
    assert.equal(error.kind, 'timeout');
    assert.match(
      error.message,
      /checking generation \(\/v1\/completions answered 200 with no token \(text "", completion_tokens 0\); received \/health 200, \/v1\/models listing m\)/,
    );
  });

  test('a generation that hangs after health and models answered is reported as that, not as "connection refused"', async (t) => {
    // Nothing listens at first (the earlier rounds see connection refused), then a server whose generation never answers.
    const port = await freePort('127.0.0.1');
    const server = createServer((req, res) => {
      if (req.url === '/health') return void res.writeHead(200).end();
      if (req.url === '/v1/models') return void res.writeHead(200).end('{"object":"list","data":[{"id":"m"}]}');
    });
    t.after(() => {
      server.closeAllConnections();
      server.close();
    });
    setTimeout(() => server.listen(port, '127.0.0.1'), 300);
    const progress: string[] = [];
    const error = await notReady(
      waitForReady({ baseUrl: `http://127.0.0.1:${port}`, profile: openai, timeoutMs: 2_500, onProgress: (p) => progress.push(`${p.phase} (${p.detail})`) }),
    );
    assert.equal(error.kind, 'timeout');
    assert.doesNotMatch(error.message, /connection refused/);
    assert.match(
      error.message,
      /not ready after 2\.5s: checking generation \(\/v1\/completions: no answer within \d+ ms; received \/health 200, \/v1\/models listing m\)/,
    );
    // While the generation is out, progress says where the wait stands.
    assert.ok(
      progress.some((line) => line === 'checking generation (/v1/completions sent, no answer yet; received /health 200, /v1/models listing m)'),
      progress.join('\n'),
    );
  });

  test('an abort signal ends the wait as interrupted', async () => {
    const port = await freePort('127.0.0.1');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const error = await notReady(waitForReady({ baseUrl: `http://127.0.0.1:${port}`, profile: openai, timeoutMs: 30_000, signal: controller.signal }));
    assert.equal(error.kind, 'aborted');
    assert.equal(error.exitCode, 130);
  });
});

describe('servelab wait (CLI)', () => {
  async function runCli(args: string[], store: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const child = spawn(process.execPath, [BIN, 'wait', ...args, '--store', store], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const [code] = (await once(child, 'exit')) as [number | null];
    clearTimeout(timer);
    return { code, stdout, stderr };
  }

  test('--json on success; the next wait shows "last ready after"; a timeout exits 3 with JSON', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-wait-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const store = join(dir, 'store.db');
    const url = await startSimulator(t, ['--load-ms', '300']);

    const first = await runCli([url, '--json', '--profile', 'simulator'], store);
    assert.equal(first.code, 0, first.stderr);
    const ready = JSON.parse(first.stdout);
    assert.equal(ready.ok, true);
    assert.equal(ready.model, 'sim-llama-8b');

    const second = await runCli([url, '--profile', 'simulator'], store);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /^ready after .*sim-llama-8b/);
    assert.match(second.stderr, /last ready after/);

    const port = await freePort('127.0.0.1');
    const timedOut = await runCli([`http://127.0.0.1:${port}`, '--json', '--timeout', '500ms'], store);
    assert.equal(timedOut.code, 3);
    assert.equal(JSON.parse(timedOut.stdout).kind, 'timeout');
    assert.match(timedOut.stderr, /servelab: not ready after 500ms.*connection refused[\s\S]*next: raise --timeout/);

    const badUrl = await runCli(['http://[bad', '--timeout', '1s'], store);
    assert.equal(badUrl.code, 2);
    assert.match(badUrl.stderr, /invalid server URL/);
  });
});
