import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

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
