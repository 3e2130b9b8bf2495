import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startUi } from '../src/ui/server.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

/**
 * quality.accuracy end to end: real simulators started by `servelab run` that know the sample set's answers
 * (--answer-key), scored answers in a real SQLite store, read back by `show` and `report`.
 */

const SAMPLE = fileURLToPath(new URL('../../examples/accuracy/arith.jsonl', import.meta.url));
const ITEMS = 40;

test('a lossless faster variant keeps the accuracy, a lossy one loses it, is flagged and cannot win or survive a race', async (t) => {
  const dir = tempDir(t, 'accuracy');
  const store = join(dir, 'store.db');
  const file = writeExperiment(dir, 'accuracy.yaml', {
    server: { command: simCommand({ tpotMs: 4, extra: ['--answer-key', SAMPLE] }), readyTimeout: '5m' },
    trials: 3,
    stopping: 'race',
    variants: {
      baseline: {},
      // Faster and lossless: the same answers sooner.
      faster: { args: ['--tpot-ms', '2'] },
      // Faster still, but three answers in ten wrong.
      lossy: { args: ['--tpot-ms', '1', '--lossy', '0.3'] },
    },
    quality: { accuracy: { path: SAMPLE, scorer: 'last-number', items: ITEMS, outputTokens: 16 } },
    objective: { maximize: 'outputTokensPerSecond', subjectTo: { accuracy: '>= baseline - 1%' } },
  });
  const run = await cli(['run', file], { store, timeoutMs: 170_000 });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stderr + run.stdout, /accuracy: baseline 40\/40 right \(untimed\)/);
  // Accuracy answers stop where the model stops: no figure predicts them, and the post-run line says so.
  assert.match(run.stdout + run.stderr, /predicted for the full interleaved grid \([^)]*; not counted: baseline's accuracy pass \(40 items\)/);

  const shown = await cli(['show', '1', '--json'], { store });
  assert.equal(shown.code, 0, shown.stderr);
  const view = JSON.parse(shown.stdout);
  const byVariant = Object.fromEntries(view.accuracy.variants.map((entry: { variant: string }) => [entry.variant, entry]));
  assert.equal(byVariant.baseline.overall.correct, ITEMS);
  assert.equal(byVariant.faster.overall.correct, ITEMS);
  assert.equal(byVariant.faster.mcnemar.pValue, 1);
  const lossy = byVariant.lossy;
  assert.ok(lossy.overall.accuracy < 0.9 && lossy.overall.accuracy > 0.4, `lossy accuracy ${lossy.overall.accuracy}`);
  assert.equal(lossy.mcnemar.variantOnly, 0);
  assert.equal(lossy.mcnemar.baselineOnly, ITEMS - lossy.overall.correct);
  assert.ok(lossy.mcnemar.pValue < 0.01, `McNemar p ${lossy.mcnemar.pValue}`);
  assert.deepEqual(
    byVariant.baseline.categories.map((entry: { category: string }) => entry.category),
    ['addition', 'multiplication', 'subtraction', 'word-problem'],
  );
  // The lossy config is the fastest, but answers worse: the race dropped it after the first pass, and it is infeasible.
  const lossyRank = view.best.ranking.find((row: { variant: string }) => row.variant === 'lossy');
  assert.equal(lossyRank.feasible, false);
  assert.match(lossyRank.violations.join(' '), /accuracy 0\.\d+ \(needs >= baseline −1\.0 pts = 0\.990\)/);
  assert.equal(lossyRank.eliminated.afterPass, 1, 'counted from 1, as the text says "eliminated after block 1"');
  assert.match(lossyRank.eliminated.reason, /breaks accuracy/);
  assert.equal(view.best.winner, 'faster');

  const text = await cli(['show', '1'], { store });
  assert.match(text.stdout, /accuracy on arith\.jsonl \(last-number scorer/);
  assert.match(text.stdout, /lossy: accuracy 0\.\d\d \[0\.\d\d, 0\.\d\d\] \(\d+\/40\), −\d+\.\d pts vs baseline, McNemar p (<0\.001|0\.00\d)/);
  assert.match(text.stdout, /faster: accuracy 1\.00 \[0\.91, 1\.00\] \(40\/40\), ±0\.0 pts vs baseline, McNemar p 1\.000/);

  const out = join(dir, 'report');
  const report = await cli(['report', '1', '--out', out], { store });
  assert.equal(report.code, 0, report.stderr);
  const html = readFileSync(join(out, 'run-1.html'), 'utf8');
  assert.match(html, /<h2>Accuracy<\/h2>/);
  assert.match(html, /<span class="pill slower">−\d+\.\d pts<\/span>/);
  assert.match(readFileSync(join(out, 'run-1.md'), 'utf8'), /## Accuracy\n\n```\naccuracy on arith\.jsonl/);

  // The dashboard's run view carries the same section, next to the verdicts.
  const ui = await startUi({ storePath: store, host: '127.0.0.1', port: 0, pollMs: 200 });
  t.after(() => ui.close());
  const response = await request(new URL('/api/runs/1', ui.url));
  const runView = (await response.body.json()) as { html: { quality: string } };
  assert.match(runView.html.quality, /<h2>Accuracy<\/h2>.*<code>lossy<\/code>/s);
});

test('a file with a broken accuracy setting is refused with its key', async (t) => {
  const dir = tempDir(t, 'accuracy-file');
  const store = join(dir, 'store.db');
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ quality: { accuracy: { path: SAMPLE, scorer: 'fuzzy' } } }, /quality\.accuracy\.scorer: expected a scorer/],
    [{ quality: { accuracy: { path: 'none.jsonl', scorer: 'exact' } } }, /quality\.accuracy\.path: no such file/],
    [{ objective: { maximize: 'outputTokensPerSecond', subjectTo: { accuracy: '>= 0.9' } } }, /subjectTo\.accuracy: accuracy needs quality\.accuracy/],
    [
      { quality: { accuracy: { path: SAMPLE, scorer: 'exact' } }, objective: { maximize: 'outputTokensPerSecond', subjectTo: { ttftP99Ms: '< baseline' } } },
      /subjectTo\.ttftP99Ms: only accuracy compares with the baseline/,
    ],
    [
      {
        quality: { accuracy: { path: SAMPLE, scorer: 'exact' } },
        objective: { maximize: 'outputTokensPerSecond', subjectTo: { accuracy: '<= baseline - 1%' } },
      },
      /subjectTo\.accuracy: "<= baseline - 1%" caps accuracy from above/,
    ],
    [
      {
        quality: { accuracy: { path: SAMPLE, scorer: 'exact' } },
        objective: { maximize: 'outputTokensPerSecond', subjectTo: { accuracy: '>= baseline - 150%' } },
      },
      /subjectTo\.accuracy: ">= baseline - 150%" is outside what a share can be/,
    ],
  ];
  // Records without an answer or a prompt: refused by `plan` (and so before `run` starts a server), naming the line.
  writeFileSync(join(dir, 'no-answer.jsonl'), '{"prompt":"What is 1 + 1?","answer":"2"}\n{"prompt":"What is 2 + 2?"}\n');
  writeFileSync(join(dir, 'no-prompt.csv'), 'question,answer\nWhat is 1 + 1?,2\n');
  writeFileSync(join(dir, 'empty.jsonl'), '\n');
  cases.push(
    [{ quality: { accuracy: { path: 'no-answer.jsonl', scorer: 'exact' } } }, /quality\.accuracy\.path: \S*no-answer\.jsonl:2: missing field "answer"/],
    [{ quality: { accuracy: { path: 'no-prompt.csv', scorer: 'exact' } } }, /quality\.accuracy\.path: \S*no-prompt\.csv:2: missing field "prompt"/],
    [{ quality: { accuracy: { path: 'empty.jsonl', scorer: 'exact' } } }, /quality\.accuracy\.path: \S*empty\.jsonl: no records/],
  );
  for (const [overrides, message] of cases) {
    const file = writeExperiment(dir, 'bad.yaml', overrides);
    const result = await cli(['plan', file], { store });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, message);
  }
});
