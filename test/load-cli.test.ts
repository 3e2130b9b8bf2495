import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { interArrivalMs } from '../src/load/random.js';
import type { BenchResult } from '../src/load/types.js';
import type { SimConfigInput } from '../src/simulate/config.js';
import { startSimulator } from '../src/simulate/server.js';
import { mulberry32 } from '../src/util/random.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const fixture = (name: string) => join(repoRoot, 'test/fixtures/load', name);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function servelab(t: TestContext, args: string[], onStart?: (child: ReturnType<typeof spawn>) => void): Promise<Run> {
  const child = spawn(process.execPath, [join(repoRoot, 'bin/servelab.js'), ...args], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  onStart?.(child);
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

async function sim(t: TestContext, input: SimConfigInput = {}) {
  const handle = await startSimulator({ startup: { loadMs: 0 }, ...input, decode: { ttftBaseMs: 5, tpotMs: 2, jitter: 0, ...input.decode } });
  t.after(() => handle.close());
  await handle.ready;
  return handle;
}

const SMALL = ['--input-len', '20', '--output-len', '8', '--warmup', '1'];

describe('servelab bench CLI', () => {
  test('--json prints a schema-versioned result; --out writes it; the table goes to stdout otherwise', async (t) => {
    const server = await sim(t);
    const json = await servelab(t, ['bench', server.url, '--concurrency', '1,2', '--requests', '4', ...SMALL, '--json', '--slo-ttft-ms', '1000']);
    assert.equal(json.code, 0, json.stderr);
    const result = JSON.parse(json.stdout) as BenchResult;
    assert.deepEqual(
      [result.schemaVersion, result.interrupted, result.backend, result.levels.map((level) => level.label)],
      [1, false, 'openai-completions', ['c=1', 'c=2']],
    );
    assert.equal(result.levels[1]!.goodput!.fraction, 1);
    assert.match(json.stderr, /c=2\s+\[#+\] 4\/4/, 'a progress line per level on a non-terminal stderr');

    const dir = mkdtempSync(join(tmpdir(), 'servelab-bench-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const out = join(dir, 'result.json');
    const table = await servelab(t, ['bench', server.url, '--backend', 'tgi', '--single-stream', '2', ...SMALL, '--out', out, '--no-progress']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /^single-stream\s+2\s+0\s/m);
    assert.equal(table.stderr, '');
    assert.equal((JSON.parse(readFileSync(out, 'utf8')) as BenchResult).levels[0]!.completed, 2);
  });

  test('gamma arrivals: the drawn schedule is the seeded one, as bursty as its burstiness says', async (t) => {
    const server = await sim(t);
    const args = ['bench', server.url, '--rate', '50', '--burstiness', '0.25', '--requests', '60', ...SMALL, '--seed', '3'];
    const run = await servelab(t, [...args, '--json']);
    assert.equal(run.code, 0, run.stderr);
    const level = (JSON.parse(run.stdout) as BenchResult).levels[0]!;
    assert.deepEqual([level.label, level.completed], ['rate=50/s,burstiness=0.25', 60]);
    // The first level's arrivals are drawn from seed + 7919 (load/run.ts seedFor): the same gaps, hence the same CV.
    const random = mulberry32(3 + 7919);
    const gaps = Array.from({ length: 59 }, () => interArrivalMs({ requestsPerSecond: 50, arrival: 'gamma', burstiness: 0.25 }, random));
    const mean = gaps.reduce((sum, gap) => sum + gap, 0) / gaps.length;
    const cv = Math.sqrt(gaps.reduce((sum, gap) => sum + (gap - mean) ** 2, 0) / (gaps.length - 1)) / mean;
    const measured = level.rate!.scheduledGapCv!;
    assert.ok(Math.abs(measured - cv) < 0.02 * cv, `schedule's gap CV ${measured}, drawn ${cv}`);
    assert.ok(measured > 1.2, `gap CV ${measured}: burstier than Poisson (1), theory 1/sqrt(0.25) = 2`);
    const table = await servelab(t, args);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /rate rate=50\/s,burstiness=0\.25: offered 50(\.0)? req\/s \(schedule [\d.]+, gap CV [\d.]+\)/);
  });

  test('unreachable server: one-line cause and next step, exit 1', async (t) => {
    const run = await servelab(t, ['bench', 'http://127.0.0.1:1', '--no-progress']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^servelab: cannot reach server at http:\/\/127\.0\.0\.1:1: .*\n {2}next: /);
    assert.doesNotMatch(run.stderr, /\n\s+at /);
  });

  test('bad dataset and bad flags', async (t) => {
    const server = await sim(t);
    const dataset = await servelab(t, ['bench', server.url, '--dataset', fixture('bad.jsonl')]);
    assert.equal(dataset.code, 1);
    assert.match(dataset.stderr, /bad\.jsonl:2: not valid JSON/);
    const flags = await servelab(t, ['bench', server.url, '--rate', '2', '--concurrency', '4']);
    assert.equal(flags.code, 2);
    assert.match(flags.stderr, /alternatives/);
    // Bounds come from the experiment file's schema: the same words a `workloads:` entry gets, one line, exit 2.
    for (const [args, expected] of [
      [['--concurrency', '200000'], /^servelab: --concurrency: expected at most 100000, got 200000\n {2}next: /],
      [['--rate', '0.0001'], /^servelab: --rate: expected at least 0\.001, got 0\.0001\n {2}next: /],
    ] as const) {
      const bounded = await servelab(t, ['bench', server.url, ...args]);
      assert.equal(bounded.code, 2, bounded.stderr);
      assert.match(bounded.stderr, expected);
    }
  });

  test('every request failing: result still printed, exit 1', async (t) => {
    const server = await sim(t, { faults: [{ kind: 'http-500', rate: 1 }] });
    const run = await servelab(t, [
      'bench',
      server.url,
      '--single-stream',
      '3',
      '--input-len',
      '20',
      '--output-len',
      '8',
      '--warmup',
      '0',
      '--json',
      '--no-progress',
    ]);
    assert.equal(run.code, 1, run.stderr);
    assert.ok(run.stdout.startsWith('{'), `stdout: ${run.stdout}\nstderr: ${run.stderr}`);
    const result = JSON.parse(run.stdout) as BenchResult;
    // Invalid at the first failure (no failure allowed): the level stops instead of sending the rest.
    assert.deepEqual(result.levels[0]!.errorsByKind, { 'http-5xx': 1 });
    assert.match(result.levels[0]!.stopped ?? '', /^stopped after 1 of 3 requests failed/);
    assert.match(run.stderr, /every measured request failed/);
  });

  test('Ctrl-C writes what was measured, interrupted: true, exit 130', async (t) => {
    const server = await sim(t, { decode: { tpotMs: 20 } });
    const run = await servelab(
      t,
      ['bench', server.url, '--concurrency', '2', '--requests', '40', '--input-len', '10', '--output-len', '10', '--warmup', '0', '--json'],
      (child) => {
        // Interrupt once the first requests have completed (their progress shows on stderr only at the end, so poll the server).
        const poll = setInterval(async () => {
          const metrics = await (await fetch(`${server.url}/metrics`)).text();
          const done = Number(/vllm:request_success_total\{[^}]*\} (\S+)/.exec(metrics)?.[1] ?? 0);
          if (done >= 2) {
            clearInterval(poll);
            child.kill('SIGINT');
          }
        }, 50);
        child.on('close', () => clearInterval(poll));
      },
    );
    assert.equal(run.code, 130, run.stderr);
    const result = JSON.parse(run.stdout) as BenchResult;
    assert.equal(result.interrupted, true);
    assert.ok(result.levels[0]!.completed >= 2 && result.levels[0]!.completed < 40);
    assert.match(run.stderr, /stopping; writing what was measured/);
  });

  test('some requests failing: exit 1 naming the count, unless --allow-failures', async (t) => {
    const server = await sim(t, { faults: [{ kind: 'http-500', rate: 0.5 }] });
    const args = ['bench', server.url, '--single-stream', '12', ...SMALL, '--no-progress'];
    const strict = await servelab(t, args);
    assert.equal(strict.code, 1, strict.stderr);
    assert.match(strict.stderr, /stopped after 1 of 12 requests failed.*not a valid measurement/);
    assert.match(strict.stderr, /--allow-failures/);
    const allowed = await servelab(t, [...args, '--allow-failures']);
    assert.equal(allowed.code, 0, allowed.stderr);
  });

  test('a server killed with SIGKILL mid-run: bench stops at once and exits 4', async (t) => {
    const server = spawn(
      process.execPath,
      [join(repoRoot, 'bin/servelab.js'), 'simulate', '--port', '0', '--load-ms', '0', '--tpot-ms', '10', '--jitter', '0'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    t.after(() => server.kill('SIGKILL'));
    const url = await new Promise<string>((resolve) => {
      let log = '';
      const onData = (chunk: Buffer) => {
        log += chunk.toString();
        const match = /listening on (http:\/\/\S+);/.exec(log);
        if (match) resolve(match[1]!);
      };
      server.stdout.on('data', onData);
      server.stderr.on('data', onData);
    });
    let killedAt = 0;
    let ended = false;
    const startedAt = Date.now();
    // 60 requests × 20 tokens × 10 ms ≈ 12 s if nothing stopped it. The kill comes once the bench is measuring (a
    // request is in the server), not after a guessed delay: on a loaded machine the client may take longer than
    // that just to start, and a server killed before its first request is a different case (unreachable, exit 1).
    const killWhenServing = async () => {
      while (!ended) {
        const state = (await (await fetch(`${url}/sim/state`)).json()) as { running: number };
        if (state.running > 0) {
          killedAt = Date.now();
          server.kill('SIGKILL');
          return;
        }
        await delay(25);
      }
    };
    const run = await servelab(
      t,
      ['bench', url, '--single-stream', '60', '--input-len', '10', '--output-len', '20', '--warmup', '0', '--json', '--no-progress'],
      // A failed poll means the server is gone already: the assertions below say how the bench took it.
      () => void killWhenServing().catch(() => {}),
    );
    ended = true;
    assert.equal(run.code, 4, run.stderr);
    assert.match(run.stderr, /server stopped accepting connections .*the benchmark was stopped/);
    const result = JSON.parse(run.stdout) as BenchResult;
    const level = result.levels[0];
    assert.ok(!level || level.failed <= 2, `it did not keep firing into the dead server (${level?.failed} failed)`);
    assert.ok(Date.now() - killedAt < 5_000, `bench ended ${Date.now() - killedAt} ms after the kill (started ${killedAt - startedAt} ms in)`);
  });
});
