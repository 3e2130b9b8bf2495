import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { judgeAccuracy, mcnemarExact, wilson } from '../src/experiment/analysis/accuracy.js';
import { accuracyViolations } from '../src/experiment/analysis/best.js';
import { parseConstraint } from '../src/experiment/spec/constraint.js';
import type { Objective } from '../src/experiment/spec/types.js';
import { parseScorer, type Scorer, scoreAnswer } from '../src/metrics/answer-score.js';
import { answerOf } from '../src/simulate/answer-key.js';
import { wrongAnswer } from '../src/simulate/output.js';
import type { AccuracyPass } from '../src/store/accuracy.js';

/** quality.accuracy's pure parts: scorers, the Wilson interval, the exact McNemar test, the constraint. */

const scorer = (text: string): Scorer => parseScorer(text)!;
const right = (name: string, output: string, answer: string): boolean => scoreAnswer(scorer(name), output, answer).correct;

describe('scorers', () => {
  test('exact: trimmed, case-insensitive equality of the whole answer', () => {
    assert.ok(right('exact', '  Paris \n', 'paris'));
    assert.ok(!right('exact', 'Paris, France', 'Paris'));
  });

  test('last-number: the last number of the answer, commas dropped, compared as numbers', () => {
    assert.ok(right('last-number', 'She has 3 boxes, so 3 × 4 = 12. The answer is 1,250.', '1250'));
    assert.ok(right('last-number', 'The total is 42.0', '#### 42'));
    assert.ok(right('last-number', 'It drops to -7', '-7'));
    assert.ok(!right('last-number', '12 then 13', '12'));
    assert.deepEqual(scoreAnswer(scorer('last-number'), 'no digits here', '5'), { correct: false });
  });

  test('choice: "answer is (X)" first, else the first standalone capital A–D; the article "a" is no choice', () => {
    assert.ok(right('choice', 'Looking at A and C, the answer is (C).', 'C'));
    assert.ok(right('choice', 'Answer: b', 'B'));
    assert.ok(right('choice', 'I pick D because it is a prime.', 'D'));
    assert.ok(right('choice', 'D', '(D)'));
    assert.ok(!right('choice', 'a cat sat on a mat', 'A'));
    assert.ok(!right('choice', 'ABBA is a band', 'A'));
  });

  test('regex: the first group, else the whole match, equals the answer', () => {
    assert.ok(right('regex:final: (\\w+)', 'steps… FINAL: yes', 'yes'));
    assert.ok(right('regex:\\d+', 'x 17 y 3', '17'));
    assert.ok(!right('regex:final: (\\w+)', 'no verdict', 'yes'));
  });

  test('unknown scorers and uncompilable patterns are refused', () => {
    assert.equal(parseScorer('fuzzy'), undefined);
    assert.equal(parseScorer('regex:'), undefined);
    assert.equal(parseScorer('regex:(unclosed'), undefined);
  });
});

describe('statistics', () => {
  test('Wilson 95%: known values, and a proper interval at 0 and 1', () => {
    const { low, high } = wilson(81, 100);
    assert.ok(Math.abs(low - 0.7222) < 5e-4 && Math.abs(high - 0.8749) < 5e-4, `${low} ${high}`);
    const all = wilson(60, 60);
    assert.equal(all.high, 1);
    assert.ok(Math.abs(all.low - 0.9398) < 5e-4, `${all.low}`);
    assert.equal(wilson(0, 10).low, 0);
  });

  test('exact McNemar: two-sided binomial on the discordant pairs', () => {
    // 10 pairs only the baseline got right, 2 only the variant: 2 × P(X ≤ 2 | n 12, ½) = 2 × 79/4096.
    assert.ok(Math.abs(mcnemarExact(10, 2, 60).pValue - (2 * 79) / 4096) < 1e-9);
    assert.equal(mcnemarExact(0, 0, 60).pValue, 1);
    assert.equal(mcnemarExact(3, 3, 60).pValue, 1);
    assert.ok(Math.abs(mcnemarExact(11, 0, 60).pValue - 2 / 2048) < 1e-9);
  });

  test('judgeAccuracy pairs items with the baseline, counts a variant by its worst start, breaks down by category', () => {
    const pass = (variant: string, serverId: number, correct: boolean[]): AccuracyPass => ({
      variant,
      serverId,
      startedAt: '2026-01-01T00:00:00Z',
      items: correct.map((ok, item) => ({ item, category: item % 2 === 0 ? 'even' : 'odd', correct: ok })),
    });
    const base = Array.from({ length: 20 }, (_, index) => index !== 0);
    const worse = base.map((ok, index) => ok && index > 8);
    const report = judgeAccuracy(
      [pass('base', 1, base), pass('cand', 2, base), pass('cand', 3, worse)],
      'base',
      ['base', 'cand', 'none'],
      {
        file: 'x.jsonl',
        scorer: 'exact',
      },
      0.05,
    );
    const [b, c, none] = report.variants;
    assert.equal(b!.overall!.correct, 19);
    assert.equal(b!.mcnemar, undefined);
    assert.equal(c!.overall!.correct, 11);
    const { pValue, ...counts } = c!.mcnemar!;
    assert.deepEqual(counts, { baselineOnly: 8, variantOnly: 0, pairs: 20 });
    assert.ok(Math.abs(pValue - 2 / 256) < 1e-12);
    assert.ok(Math.abs(c!.delta! + 0.4) < 1e-12);
    assert.equal(c!.worse, true, 'p 0.0078 < alpha 0.05');
    const strict = judgeAccuracy([pass('base', 1, base), pass('cand', 3, worse)], 'base', ['cand'], { file: 'x.jsonl', scorer: 'exact' }, 0.001);
    assert.equal(strict.variants[1]!.worse, false, "the experiment's alpha decides, not a fixed 0.05");
    assert.deepEqual(
      c!.categories.map((entry) => [entry.category, entry.correct, entry.items]),
      [
        ['even', 5, 10],
        ['odd', 6, 10],
      ],
    );
    assert.equal(none!.overall, undefined);
  });
});

describe('subjectTo.accuracy', () => {
  const objective = (text: string): Objective => ({
    metric: 'outputTokensPerSecond',
    direction: 'maximize',
    workload: 'w',
    constraints: [],
    accuracy: parseConstraint(text),
  });
  const scores = new Map([
    ['base', 0.81],
    ['same', 0.8],
    ['worse', 0.78],
  ]);

  test('"baseline - 1%" is one percentage point below the baseline: 0.80 holds against 0.81, 0.78 does not', () => {
    assert.deepEqual(parseConstraint('>= baseline - 1%'), { op: '>=', baselineOffset: -0.01 });
    assert.deepEqual(parseConstraint('>=baseline'), { op: '>=', baselineOffset: 0 });
    assert.deepEqual(parseConstraint('> 0.8'), { op: '>', value: 0.8 });
    const relative = objective('>= baseline - 1%');
    assert.deepEqual(accuracyViolations(relative, scores, 'same', 'base'), []);
    assert.deepEqual(accuracyViolations(relative, scores, 'base', 'base'), []);
    assert.match(accuracyViolations(relative, scores, 'worse', 'base').join(), /accuracy 0\.780 \(needs >= baseline −1\.0 pts = 0\.800\)/);
  });

  test('a plain share, and an unscored config is not feasible', () => {
    const plain = objective('>= 0.8');
    assert.deepEqual(accuracyViolations(plain, scores, 'same', 'base'), []);
    assert.equal(accuracyViolations(plain, scores, 'worse', 'base').length, 1);
    assert.match(accuracyViolations(plain, scores, 'missing', 'base').join(), /accuracy not measured/);
    assert.match(accuracyViolations(objective('>= baseline'), new Map([['x', 1]]), 'x', 'base').join(), /not measured/);
  });
});

describe('simulator answer key', () => {
  test('a prompt is found as text or as the last user message of a chat request; wrong answers are wrong for every scorer', () => {
    const key = new Map([['What is 2 + 2?', '4']]);
    assert.equal(answerOf(key, 'What is 2 + 2?'), '4');
    assert.equal(answerOf(key, JSON.stringify([{ role: 'user', content: 'What is 2 + 2?' }])), '4');
    assert.equal(answerOf(key, 'What is 3 + 3?'), undefined);
    for (const u of [0, 0.5, 0.99]) {
      assert.ok(!right('last-number', wrongAnswer('1,250', u), '1250'));
      assert.ok(!right('choice', wrongAnswer('B', u), 'B'));
      assert.ok(!right('exact', wrongAnswer('Paris', u), 'Paris'));
    }
  });
});
