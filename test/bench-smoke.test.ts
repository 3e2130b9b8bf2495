import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { needs } from './support-services.js';

/**
 * The benchmarks behind the docs' figures, each run with its small smoke setting (the one its header names): a
 * bench that breaks (campaign-cost stopped by the reference guard after its first strategy, telemetry-overhead
 * never exiting) fails here instead of in the next person's measurement. Each must exit 0 and print its figure.
 */

const ROOT = new URL('../../', import.meta.url);
const BENCH_SOURCES = fileURLToPath(new URL('bench/', ROOT));

interface Smoke {
  args: string[];
  /** The lines that carry the bench's figure: all must be printed. */
  figures: RegExp[];
  /** Why it cannot run on this machine, if so. */
  skip?: string;
}

const curlMissing = spawnSync('curl', ['--version'], { stdio: 'ignore' }).error
  ? 'curl not on the PATH (the shell loop ready-latency compares with)'
  : undefined;

const SMOKE: Record<string, Smoke> = {
  // Every strategy, so the second and third runs of "campaign-cost" pass the reference guard.
  'campaign-cost': {
    args: ['--seeds', '1', '--configs', '2', '--trials', '2', '--scale', '1000'],
    figures: [
      /^interleaved grid +1 +[\d.]+ s +1\.00× .* \d+\/1$/m,
      /^sequential +1 +[\d.]+ s +[\d.]+× .* \d+\/1$/m,
      /^race \+ auto +1 +[\d.]+ s +[\d.]+× .* \d+\/1$/m,
    ],
  },
  'client-overhead': {
    args: ['--streams', '8', '--output-len', '16', '--requests', '64', '--paced-tpot-ms', '2'],
    figures: [/^servelab \/ reference: tok\/s [\d.]+x, req\/s [\d.]+x, cpu per token [\d.]+x$/m],
  },
  'drift-specificity': {
    args: ['--seeds', '200', '--pool', '6', '--history', '4', '--reruns', '200'],
    figures: [/env change \+ 10% slowdown stopped by its 2nd trial: [\d.]+%/, /false-alarm rate on unchanged reruns: [\d.]+%/],
  },
  'ready-latency': {
    args: ['--trials', '1', '--shell-sleep', '0.2'],
    figures: [/^servelab wait .*median [\d.]+ ms/m, /^servelab launch .*median [\d.]+ ms/m, /^shell loop, sleep 0\.2: +median [\d.]+ ms/m],
    ...(curlMissing && { skip: curlMissing }),
  },
  'search-cost': {
    args: ['--seeds', '1', '--grid-blocks', '1'],
    figures: [/^search vs grid: [\d.]+× fewer GPU-hours, \d+% of seeds within tolerance \(random search: \d+% .*\)$/m],
  },
  'telemetry-overhead': {
    args: ['--rounds', '1', '--requests', '32', '--concurrency', '4', '--output-len', '16', '--interval-ms', '200', '--fake-nvidia-smi'],
    figures: [/^ratio with\/without: [\d.]+ /m, /^GPU samples recorded: \d+/m],
  },
};

function runBench(name: string, args: string[], timeoutMs = 170_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL(`dist/bench/${name}.js`, ROOT));
  return new Promise((resolve) => {
    execFile(process.execPath, [script, ...args], { encoding: 'utf8', timeout: timeoutMs, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

/** A failure is one line of cause and one of next step, no stack trace. */
function assertOneLineFailure(stderr: string): void {
  const lines = stderr.trimEnd().split('\n');
  assert.match(lines.at(-2) ?? '', /^servelab: bench\/[a-z-]+: \S/, stderr);
  assert.match(lines.at(-1) ?? '', /^ {2}next: \S/, stderr);
  assert.doesNotMatch(stderr, /^\s+at /m, stderr);
}

// Two at a time: the file's time limit (the runner's 180 s) holds on a loaded 2-core box, and CI's other test file
// running beside this one still gets its share.
describe('bench scripts: smoke settings', { concurrency: 2 }, () => {
  for (const [name, smoke] of Object.entries(SMOKE)) {
    test(`${name} ${smoke.args.join(' ')} exits 0 and prints its figure`, needs(smoke.skip), async () => {
      const { code, stdout, stderr } = await runBench(name, smoke.args);
      assert.equal(code, 0, `exit ${code} (null: killed at the time limit, e.g. a child left running)\n${stdout}\n${stderr}`);
      for (const figure of smoke.figures) assert.match(stdout, figure, stdout);
    });
  }

  test('every bench script has a smoke setting here, and its header names it', () => {
    const scripts = readdirSync(BENCH_SOURCES)
      .filter((file) => file.endsWith('.ts'))
      .map((file) => file.slice(0, -'.ts'.length));
    assert.deepEqual(scripts.sort(), Object.keys(SMOKE).sort());
    for (const script of scripts) {
      const header = readFileSync(`${BENCH_SOURCES}${script}.ts`, 'utf8');
      assert.ok(
        header.includes(`Smoke setting (CI, test/bench-smoke.test.ts): ${SMOKE[script]!.args.join(' ')}`),
        `bench/${script}.ts names its smoke setting`,
      );
    }
  });

  test('a wrong flag is a usage error (exit 2) in one line of cause and one of next step', async () => {
    const { code, stderr } = await runBench('campaign-cost', ['--seeds', 'six']);
    assert.equal(code, 2, stderr);
    assertOneLineFailure(stderr);
    assert.match(stderr, /--seeds must be a positive integer, got "six"/);
  });

  test('a bench that cannot measure exits 1 with its cause, never a stack trace or a figure', async () => {
    // Nothing listens on port 9 of 127.0.0.1 (discard, never served here): every request fails.
    const { code, stdout, stderr } = await runBench('telemetry-overhead', ['--url', 'http://127.0.0.1:9', '--rounds', '1', '--requests', '4']);
    assert.equal(code, 1, stderr);
    assertOneLineFailure(stderr);
    assert.doesNotMatch(stdout, /ratio with\/without/);
  });

  test('every bench script the README and docs name exists', () => {
    const docs = ['README.md', ...readdirSync(new URL('docs/', ROOT)).map((file) => `docs/${file}`)].filter((file) => file.endsWith('.md'));
    const named = new Set<string>();
    for (const file of docs) {
      for (const match of readFileSync(new URL(file, ROOT), 'utf8').matchAll(/\bbench\/([a-z][a-z0-9-]*)(?:\.[jt]s)?\b/g)) named.add(match[1]!);
    }
    assert.ok(named.has('campaign-cost'), 'the docs name the campaign-cost bench');
    for (const script of named)
      assert.ok(existsSync(`${BENCH_SOURCES}${script}.ts`), `bench/${script} is named in the docs but bench/${script}.ts does not exist`);
  });
});
