import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { timedScorer } from '../src/experiment/run/timed-score.js';
import { parseScorer } from '../src/metrics/answer-score.js';
import { cli, SERVELAB, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { listening, waitFor } from './support-wait.js';

/**
 * Hostile strings and inputs (issue 33): dataset text reaching the Markdown report, the HTML report and the
 * terminal; a user regex that backtracks catastrophically; a server log of one enormous line.
 */

const FENCE_BREAKER = 'sums\n```\n<img src=x onerror=alert(1)>';
const TERMINAL_BREAKER = '\u001b[2J\u001b]0;pwned\u0007tricks\u009b31m';

/** A sample set and the simulator's answer key in one file: the simulator answers each prompt with its answer. */
function sampleSet(dir: string, records: Array<{ prompt: string; answer: string; category?: string }>): string {
  const path = join(dir, 'samples.jsonl');
  writeFileSync(path, `${records.map((record) => JSON.stringify(record)).join('\n')}\n`);
  return path;
}

test('dataset categories with a code fence, HTML and terminal escapes stay text in show, Markdown and HTML', { timeout: 170_000 }, async (t) => {
  const dir = tempDir(t, 'hostile-strings');
  const store = join(dir, 'store.db');
  const samples = sampleSet(dir, [
    { prompt: 'What is 1 + 1?', answer: '2', category: FENCE_BREAKER },
    { prompt: 'What is 2 + 2?', answer: '4', category: TERMINAL_BREAKER },
  ]);
  const file = writeExperiment(dir, 'hostile.yaml', {
    server: { command: simCommand({ extra: ['--answer-key', samples] }), readyTimeout: '5m' },
    trials: 1,
    variants: { baseline: {}, other: { args: ['--tpot-ms', '2'] } },
    quality: { accuracy: { path: samples, scorer: 'last-number', outputTokens: 8 } },
  });
  const run = await cli(['run', file], { store, timeoutMs: 150_000 });
  assert.equal(run.code, 0, run.stderr);

  const shown = await cli(['show', '1'], { store });
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /\\x1b\[2J\\x1b\]0;pwned\\x07tricks\\x9b31m/);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for the raw control characters.
  assert.doesNotMatch(shown.stdout, /[\u001b\u0007\u009b]/);

  const out = join(dir, 'report');
  const report = await cli(['report', '1', '--out', out], { store });
  assert.equal(report.code, 0, report.stderr);
  const markdown = readFileSync(join(out, 'run-1.md'), 'utf8');
  // The accuracy block's fence is longer than the category's ```: the <img> stays inside the code block.
  const block = /## Accuracy\n\n(`{3,})\n([\s\S]*?)\n\1\n/.exec(markdown);
  assert.ok(block, markdown);
  assert.ok(block[1]!.length > 3, `fence ${block[1]}`);
  assert.match(block[2]!, /<img src=x onerror=alert\(1\)>/);
  const outside = markdown.replace(block[0], '');
  assert.doesNotMatch(outside, /<img/);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the test looks for the raw control characters.
  assert.doesNotMatch(markdown, /[\u001b\u0007\u009b]/);
  const html = readFileSync(join(out, 'run-1.html'), 'utf8');
  assert.doesNotMatch(html, /<img src=x/);
  assert.match(html, /&lt;img src=x onerror=alert\(1\)&gt;/);
});

test('a regex scorer is stopped at its time limit in a worker; a sane answer after it still scores; an abort ends it at once', async () => {
  const scorer = parseScorer('regex:^(a+)+$')!;
  const controller = new AbortController();
  const timed = timedScorer(scorer, controller.signal, 300);
  try {
    const started = Date.now();
    assert.equal(await timed.score(`${'a'.repeat(40)}!`, 'a'), undefined);
    assert.ok(Date.now() - started < 5_000, `took ${Date.now() - started} ms`);
    assert.deepEqual(await timed.score('aaa', 'aaa'), { correct: true, extracted: 'aaa' });
    const stuck = timed.score(`${'a'.repeat(40)}!`, 'a');
    setTimeout(() => controller.abort(new Error('stopped')), 50);
    const aborted = Date.now();
    await assert.rejects(stuck, /stopped/);
    assert.ok(Date.now() - aborted < 250, `abort took ${Date.now() - aborted} ms`);
  } finally {
    await timed.close();
  }
});

test('a runner scoring with a catastrophic regex stops on SIGTERM, stops its server and leaves the run resumable', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t, 'hostile-regex');
  const store = join(dir, 'store.db');
  // Each answer (" aaa…a!": the simulator's words start with a space) makes ^\s*(a+)+$ try 2^40 ways: on the
  // runner's own thread it would never return. Without the \s* the leading space fails the pattern at once.
  const samples = sampleSet(
    dir,
    Array.from({ length: 30 }, (_, index) => ({ prompt: `Say the letters ${index}.`, answer: `${'a'.repeat(40)}!` })),
  );
  const file = writeExperiment(dir, 'regex.yaml', {
    server: { command: simCommand({ extra: ['--answer-key', samples] }), readyTimeout: '5m' },
    trials: 1,
    quality: { accuracy: { path: samples, scorer: 'regex:^\\s*(a+)+$', outputTokens: 64 } },
  });
  const child = spawn(process.execPath, [SERVELAB, 'run', file], { env: { ...process.env, SERVELAB_STORE: store }, stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  assert.ok(await waitFor(() => /server ready in .* at http:\/\/127\.0\.0\.1:(\d+)/.test(stderr), 60_000), stderr);
  const port = Number(/server ready in .* at http:\/\/127\.0\.0\.1:(\d+)/.exec(stderr)![1]);
  // The 30 answers take well under a second to send; the scoring then runs, one answer per time limit.
  await delay(2_500);
  // The signal must land while the answers are being scored, or this would test an ordinary stop.
  assert.doesNotMatch(stderr, /accuracy: baseline/, 'the scoring had already finished');
  const signalled = Date.now();
  child.kill('SIGTERM');
  const code = await Promise.race([exited, delay(15_000).then(() => 'hung' as const)]);
  assert.notEqual(code, 'hung', `no exit 15 s after SIGTERM:\n${stderr}`);
  assert.equal(code, 130, stderr);
  assert.ok(Date.now() - signalled < 10_000);
  assert.match(stderr, /run 1 interrupted; continue with `servelab run --resume 1`/);
  assert.equal(await listening(port), false, 'the server was stopped');
  const shown = await cli(['show', '1', '--json'], { store });
  assert.equal(JSON.parse(shown.stdout).run.status, 'interrupted');
});

test('`servelab log` on a log of one 30 MB line reads it in chunks and cuts the line in its cause', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'hostile-log');
  const store = join(dir, 'store.db');
  const path = join(dir, 'server.log');
  writeFileSync(path, `INFO starting\nTraceback (most recent call last): ${'x'.repeat(30 * 1024 * 1024)}\n`);
  const result = await cli(['log', path, '--profile', 'vllm'], { store });
  assert.equal(result.code, 4, result.stderr);
  assert.ok(result.stdout.length < 10_000, `printed ${result.stdout.length} characters`);
  assert.match(result.stdout, /x… \(\d+ more characters cut\)/);
});
