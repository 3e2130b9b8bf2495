import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseKnobConstraint } from '../src/experiment/spec/knob-expr.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { UserError } from '../src/util/errors.js';
import { ExitCode } from '../src/util/exit.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

const EXAMPLE = fileURLToPath(new URL('../../examples/search-spec-decode.yaml', import.meta.url));

describe('knob constraints', () => {
  test('arithmetic with precedence and parentheses, every comparison', () => {
    const holds = (text: string, values: Record<string, number>): boolean => {
      const parsed = parseKnobConstraint(text, ['steps', 'topk', 'draftTokens']);
      assert.ok(parsed.ok, text);
      return parsed.holds(values);
    };
    assert.equal(holds('draftTokens <= steps * topk + 1', { steps: 3, topk: 2, draftTokens: 7 }), true);
    assert.equal(holds('draftTokens <= steps * topk + 1', { steps: 3, topk: 2, draftTokens: 8 }), false);
    assert.equal(holds('draftTokens <= steps * (topk + 1)', { steps: 3, topk: 2, draftTokens: 9 }), true);
    assert.equal(holds('steps - topk - 1 == 0', { steps: 3, topk: 2, draftTokens: 0 }), true);
    assert.equal(holds('draftTokens / 2 != steps', { steps: 2, topk: 1, draftTokens: 4 }), false);
    assert.equal(holds('-steps < 0', { steps: 2, topk: 1, draftTokens: 4 }), true);
    assert.equal(holds('topk > 1', { steps: 2, topk: 1, draftTokens: 4 }), false);
    assert.equal(holds('topk >= 1.5', { steps: 2, topk: 2, draftTokens: 4 }), true);
  });

  test('an unknown knob, a stray character, a missing comparison: said with the place, nothing evaluated', () => {
    const error = (text: string, named: string[] = []): string => {
      const parsed = parseKnobConstraint(text, ['steps', 'topk'], named);
      assert.ok(!parsed.ok, text);
      return parsed.message;
    };
    assert.match(error('draft <= steps'), /unknown knob "draft" at column 1 \(knobs: steps, topk\)/);
    assert.match(error('steps <= topk; process.exit()'), /unexpected ";" at column 14/);
    assert.match(error('steps + topk'), /expected a comparison/);
    assert.match(error('steps <= (topk + 1'), /expected "\)" instead of the end/);
    assert.match(error('steps <= topk 2'), /unexpected "2" at column 15 after the comparison/);
    assert.match(error('kernel == 1', ['kernel']), /knob "kernel" is a list of names/);
  });
});

describe('search: section', () => {
  test('the example: 215 valid points of 360, each a variant with its knob values and filled args', () => {
    const experiment = loadExperiment(EXAMPLE);
    assert.equal(experiment.search?.combinations, 360);
    assert.equal(experiment.variants.length, 215);
    const point = experiment.variants.find((variant) => variant.name === 'eagle3-s3-k2-d7')!;
    assert.deepEqual(point.params, { steps: 3, topk: 2, draftTokens: 7 });
    assert.deepEqual(point.server.command.slice(-6), ['--speculative-num-steps', '3', '--speculative-eagle-topk', '2', '--speculative-num-draft-tokens', '7']);
    assert.ok(!experiment.variants.some((variant) => variant.name === 'eagle3-s3-k2-d8'), 'breaks draftTokens <= steps * topk + 1');
    assert.equal(experiment.search?.tolerance, 0.02);
    assert.deepEqual(experiment.search?.tieBreak, [
      { kind: 'knob', name: 'draftTokens', descending: false },
      { kind: 'knob', name: 'steps', descending: false },
    ]);
  });

  test('ranges: whole steps, a count on a log scale, real steps', (t) => {
    const dir = tempDir(t, 'search-spec');
    const file = writeExperiment(dir, 'ranges.yaml', {
      variants: {},
      search: {
        knobs: { a: { min: 2, max: 8, step: 3 }, b: { min: 1, max: 64, count: 4, log: true }, c: { min: 0.5, max: 0.7, step: 0.1 } },
        args: ['--a', '{a}', '--b', '{b}', '--c', '{c}'],
        tolerance: '5%',
        tieBreak: ['b desc', 'ttftP99Ms'],
        budget: { gpuHours: 2 },
      },
    });
    const experiment = loadExperiment(file);
    assert.deepEqual(
      experiment.search?.knobs.map((knob) => knob.values),
      [
        [2, 5, 8],
        [1, 4, 16, 64],
        [0.5, 0.6, 0.7],
      ],
    );
    assert.equal(experiment.search?.knobs[1]?.log, true);
    assert.equal(experiment.variants.length, 36);
    assert.equal(experiment.variants[0]?.name, 'a2-b1-c0.5');
    assert.equal(experiment.search?.tolerance, 0.05);
    assert.deepEqual(experiment.search?.tieBreak, [
      { kind: 'knob', name: 'b', descending: true },
      { kind: 'metric', metric: 'ttftP99Ms' },
    ]);
    assert.deepEqual(experiment.search?.budget, { gpusPerServer: 1, gpuHours: 2 });
  });

  test('a bad constraint, a knob filling nothing, an unknown tie-break: one line with file:line and key, exit 2', async (t) => {
    const dir = tempDir(t, 'search-spec');
    const store = join(dir, 'store.db');
    const base = { variants: {}, server: { command: simCommand(), readyTimeout: '5m' } };
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [
        { knobs: { steps: [1, 2], topk: [1, 2] }, args: ['{steps}', '{topk}'], constraints: ['draftTokens <= steps * topk + 1'] },
        /search\.constraints\[0\]: "draftTokens <= steps \* topk \+ 1": unknown knob "draftTokens" at column 1/,
      ],
      [{ knobs: { steps: [1, 2], topk: [1, 2] }, args: ['{steps}'] }, /search\.knobs\.topk: fills no \{topk\} in search\.args or search\.env/],
      [{ knobs: { steps: [1, 2] }, args: ['{steps}'], tieBreak: ['draft'] }, /search\.tieBreak\[0\]: unknown knob or metric "draft"/],
      [{ knobs: { steps: [1, 2] }, args: ['{steps}'], constraints: ['steps > 5'] }, /search\.constraints: no point of the 2 meets every constraint/],
      [{ knobs: { steps: [1, 2] }, args: ['{steps}'], tolerance: '2' }, /tolerance/],
    ];
    for (const [search, expected] of cases) {
      const file = writeExperiment(dir, 'bad.yaml', { ...base, search });
      assert.throws(
        () => loadExperiment(file),
        (error: unknown) =>
          error instanceof UserError && error.exitCode === ExitCode.usage && expected.test(error.message) && error.message.startsWith(`${file}:`),
      );
    }
    // And through the command: the line, exit 2, no stack trace.
    const file = writeExperiment(dir, 'bad.yaml', { ...base, search: cases[0]![0] });
    const result = await cli(['plan', file], { store });
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, cases[0]![1]);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  });
});
