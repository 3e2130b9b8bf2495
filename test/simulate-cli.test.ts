import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request } from 'undici';
import { SERVELAB_BIN, type SimulatorProcess, spawnSimulator } from '../src/simulate/child.js';

const UVICORN = /Uvicorn running on http:\/\/127\.0\.0\.1:\d+/;

async function getJson(url: string): Promise<{ status: number; body: unknown }> {
  const response = await request(url, { headersTimeout: 5000, bodyTimeout: 5000 });
  return { status: response.statusCode, body: await response.body.json() };
}

/** Runs the CLI to completion (in parallel with others: node startup dominates these tests' time). */
function runCli(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SERVELAB_BIN, 'simulate', ...args], { encoding: 'utf8', timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

async function start(t: TestContext, args: string[]): Promise<SimulatorProcess> {
  const sim = await spawnSimulator(args);
  t.after(() => sim.stop());
  return sim;
}

describe('servelab simulate (child process)', () => {
  test('prints startup phases in order, answers 503 while loading and 200 once ready, exits 0 on SIGTERM', async (t) => {
    const sim = await start(t, ['--load-ms', '2500', '--port', '0']);
    const loading = await getJson(`${sim.url}/health`);
    assert.equal(loading.status, 503);
    assert.deepEqual(loading.body, { status: 'loading' });

    await sim.waitForLine(UVICORN, 10_000);
    const ready = await getJson(`${sim.url}/health`);
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ok' });

    const output = sim.output();
    const phases = [
      'Starting to load model sim-llama-8b',
      'Loading model weights',
      'Loading weights took 1.20 GB /',
      'Memory profiling',
      'Capturing CUDA graphs',
      'Graph capturing finished',
      'Application startup complete',
      `Uvicorn running on ${sim.url}`,
    ];
    const positions = phases.map((phase) => output.indexOf(phase));
    assert.ok(
      positions.every((position) => position >= 0),
      output,
    );
    assert.deepEqual(
      [...positions].sort((a, b) => a - b),
      positions,
      `phases out of order:\n${output}`,
    );
    assert.match(output, /^INFO \d\d-\d\d \d\d:\d\d:\d\d \[sim\] Loading model weights/m);

    const exit = await sim.stop();
    assert.equal(exit.code, 0);
  });

  test('crash prints a Python traceback and exits 1 without ever becoming ready', async (t) => {
    const sim = await start(t, ['--load-ms', '400', '--fail', 'crash']);
    const exit = await sim.exited;
    assert.equal(exit.code, 1);
    assert.match(sim.output(), /Traceback \(most recent call last\):\n[\s\S]*RuntimeError: /);
    assert.doesNotMatch(sim.output(), UVICORN);
  });

  test('a crash after ready kills a serving process', async (t) => {
    const sim = await start(t, ['--load-ms', '100', '--fail', 'crash', '--fail-at-ms', '600']);
    await sim.waitForLine(UVICORN, 10_000);
    assert.equal((await sim.exited).code, 1);
    assert.match(sim.output(), /Traceback \(most recent call last\):/);
  });

  test('oom prints the CUDA OOM error and keeps running, unhealthy', async (t) => {
    const sim = await start(t, ['--load-ms', '400', '--fail', 'oom', '--fail-at-ms', '100']);
    await sim.waitForLine(/^torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate 2\.00 GiB/, 10_000);
    assert.match(sim.output(), /Traceback \(most recent call last\):/);
    await sleep(700); // past loadMs: it must neither become ready nor exit
    assert.equal(sim.child.exitCode, null);
    assert.equal((await getJson(`${sim.url}/health`)).status, 503);
    assert.doesNotMatch(sim.output(), UVICORN);
  });

  test('hang stops making progress: no more phases, health stays 503', async (t) => {
    const sim = await start(t, ['--load-ms', '400', '--fail', 'hang', '--fail-at-ms', '50']);
    await sleep(800);
    assert.equal(sim.child.exitCode, null);
    assert.equal((await getJson(`${sim.url}/health`)).status, 503);
    assert.doesNotMatch(sim.output(), /Capturing CUDA graphs/);
    assert.doesNotMatch(sim.output(), UVICORN);
  });

  test('not-serving: healthy, but no models and generation refused', async (t) => {
    const sim = await start(t, ['--load-ms', '100', '--fail', 'not-serving']);
    await sim.waitForLine(UVICORN, 10_000);
    assert.equal((await getJson(`${sim.url}/health`)).status, 200);
    assert.deepEqual((await getJson(`${sim.url}/v1/models`)).body, { object: 'list', data: [] });
    const generation = await request(`${sim.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'hello', max_tokens: 2 }),
    });
    assert.equal(generation.statusCode, 503);
    const body = (await generation.body.json()) as { error: { code: number } };
    assert.equal(body.error.code, 503);
  });

  test('flags: bad values are usage errors naming the flag; --print-config shows the merged config', async () => {
    const [negative, missing, printed] = await Promise.all([
      runCli('--tpot-ms', '-1'),
      runCli('--config', '/nonexistent/sim.yaml'),
      runCli(
        '--print-config',
        '--tpot-ms',
        '3',
        '--env-speedup',
        'NCCL_PROTO=LL:1.2',
        '--env-speedup',
        'NCCL_PROTO=LL,NCCL_ALGO=Ring:1.1',
        '--fault',
        'stall:0.5:4',
      ),
    ]);
    assert.equal(negative.code, 2);
    assert.match(negative.stderr, /--tpot-ms/);
    assert.doesNotMatch(negative.stderr, /\n\s+at /);
    assert.equal(missing.code, 2, 'a config file that cannot be read is a usage error');
    assert.match(missing.stderr, /cannot read config file/);
    assert.equal(printed.code, 0, printed.stderr);
    const config = JSON.parse(printed.stdout) as { decode: { tpotMs: number }; envSpeedups: unknown; faults: unknown };
    assert.equal(config.decode.tpotMs, 3);
    assert.deepEqual(config.envSpeedups, [
      { when: [{ name: 'NCCL_PROTO', value: 'LL' }], factor: 1.2 },
      {
        when: [
          { name: 'NCCL_PROTO', value: 'LL' },
          { name: 'NCCL_ALGO', value: 'Ring' },
        ],
        factor: 1.1,
      },
    ]);
    assert.deepEqual(config.faults, [{ kind: 'stall', rate: 0.5, afterTokens: 4 }]);
  });

  test('a start loads no YAML parser unless --config names a file (70-90 ms of each start of a point)', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-yaml-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'sim.yaml');
    writeFileSync(file, 'decode:\n  tpotMs: 7\n');
    // Says on exit whether the yaml package was ever required in the simulator's process.
    const probe = `data:text/javascript,${encodeURIComponent(
      "import { createRequire } from 'node:module'; process.on('exit', () => process.stderr.write('yaml loaded: ' + Object.keys(createRequire('/').cache).some((key) => key.includes('/node_modules/yaml/'))));",
    )}`;
    const printConfig = (...args: string[]) =>
      new Promise<{ stdout: string; stderr: string }>((resolve, reject) => {
        execFile(
          process.execPath,
          ['--import', probe, SERVELAB_BIN, 'simulate', '--print-config', ...args],
          { encoding: 'utf8', timeout: 30_000 },
          (error, stdout, stderr) => (error ? reject(error) : resolve({ stdout, stderr })),
        );
      });
    const [bare, configured] = await Promise.all([printConfig(), printConfig('--config', file)]);
    assert.match(bare.stderr, /yaml loaded: false/);
    assert.match(configured.stderr, /yaml loaded: true/);
    assert.equal((JSON.parse(configured.stdout) as { decode: { tpotMs: number } }).decode.tpotMs, 7);
  });
});
