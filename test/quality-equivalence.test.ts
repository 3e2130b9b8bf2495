import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { type BestVerdict, bestConfig, objectiveOf } from '../src/experiment/analysis/best.js';
import { experimentEquivalence } from '../src/experiment/analysis/equivalence.js';
import { loadRun } from '../src/experiment/run/run-store.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import type { Objective } from '../src/experiment/spec/types.js';
import { openStore } from '../src/store/db.js';
import { listEquivalencePasses } from '../src/store/equivalence.js';
import { listTrials } from '../src/store/queries.js';
import { cli, servingSimulator, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { faultServerSection } from './support-fault-server.js';

/**
 * quality.equivalence end to end: real simulator servers started by `servelab run`, answers stored in a real SQLite
 * store, read back by `show` and `report`; and `bench --save-outputs` / `compare-outputs` on two real servers.
 */

const PROMPTS = 8;
const OUTPUT_TOKENS = 32;

/** The best config of stored run 1 under another subjectTo on its answers: the same stored trials and passes, judged again. */
function bestUnder(store: string, quality: Pick<Objective, 'outputs' | 'outputMatch'>): BestVerdict {
  const db = openStore(store);
  try {
    const { experiment } = loadRun(db, 1);
    const { outputs: _outputs, outputMatch: _outputMatch, ...objective } = objectiveOf(experiment);
    const equivalence = experimentEquivalence(experiment, listEquivalencePasses(db, 1))!;
    return bestConfig({ ...experiment, objective: { ...objective, ...quality } }, listTrials(db, 1), { equivalence });
  } finally {
    db.close();
  }
}

const rankOf = (best: BestVerdict, variant: string) => best.ranking.find((row) => row.variant === variant)!;

test('a lossless faster variant stays equivalent, a lossy one is "outputs changed" and cannot win under outputMatch', async (t) => {
  const dir = tempDir(t, 'quality');
  const store = join(dir, 'store.db');
  const file = writeExperiment(dir, 'quality.yaml', {
    server: { command: simCommand({ tpotMs: 4 }), readyTimeout: '5m' },
    trials: 2,
    variants: {
      baseline: {},
      // Faster and lossless: the same answers sooner.
      faster: { args: ['--tpot-ms', '2'] },
      // Faster still, but one token in ten replaced.
      lossy: { args: ['--tpot-ms', '1', '--lossy', '0.1'] },
      // The same tokens for 24 of 32, then another tail: a late, numerics-like divergence.
      late: { args: ['--divergence-after', '24'] },
    },
    quality: { equivalence: { prompts: PROMPTS, outputTokens: OUTPUT_TOKENS } },
    objective: { maximize: 'outputTokensPerSecond', subjectTo: { outputMatch: '>= 0.99' } },
  });
  const run = await cli(['run', file], { store, timeoutMs: 170_000 });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /outputs/);

  const shown = await cli(['show', '1', '--json'], { store });
  assert.equal(shown.code, 0, shown.stderr);
  const view = JSON.parse(shown.stdout);
  const status = Object.fromEntries(view.equivalence.variants.map((entry: { variant: string; status: string }) => [entry.variant, entry.status]));
  assert.deepEqual(status, { faster: 'equivalent', lossy: 'outputs changed', late: 'numerics-level divergence' });
  // The floor is measured: the baseline's answers on its second start and at concurrency N, all identical.
  const floor = view.equivalence.floor;
  assert.deepEqual(floor.comparisons.sort(), ['c=8', 'start 2', 'start 2 c=8']);
  assert.equal(floor.identicalShare, 1);
  assert.equal(floor.tokenAgreement, 1);
  const lossy = view.equivalence.variants.find((entry: { variant: string }) => entry.variant === 'lossy').match;
  assert.ok(lossy.tokenAgreement < 0.99 && lossy.tokenAgreement > 0.75, `lossy agreement ${lossy.tokenAgreement}`);
  assert.equal(lossy.unit, 'token ids');
  // The lossy config is the fastest, but its answers changed: it is infeasible, and the winner is a lossless one.
  const lossyRank = view.best.ranking.find((row: { variant: string }) => row.variant === 'lossy');
  assert.equal(lossyRank.feasible, false);
  assert.match(lossyRank.violations.join(' '), /outputMatch/);
  assert.equal(view.best.winner, 'faster');

  // Without any subjectTo the changed config is infeasible all the same, and the conclusion says what it passed over.
  const byDefault = bestUnder(store, {});
  assert.equal(byDefault.winner, 'faster');
  assert.match(rankOf(byDefault, 'lossy').violations.join(' '), /^outputs changed \(answers differ early or widely/);
  assert.match(byDefault.conclusion, /; better on outputTokensPerSecond but infeasible: lossy \(outputs changed/);
  assert.deepEqual(rankOf(byDefault, 'late').caveats, [
    { kind: 'note', text: 'outputs numerics-level divergence (differs beyond the floor, but late, as numerics do)' },
  ]);

  const text = await cli(['show', '1'], { store });
  assert.match(text.stdout, /lossy: outputs changed/);
  assert.match(text.stdout, /A\/A floor/);

  const out = join(dir, 'report');
  const report = await cli(['report', '1', '--out', out], { store });
  assert.equal(report.code, 0, report.stderr);
  const html = readFileSync(join(out, 'run-1.html'), 'utf8');
  assert.match(html, /Output equivalence/);
  assert.match(html, /<div class="answers"><pre><b>baseline<\/b>/);
});

test("a variant whose answers change only when batched is not equivalent: variants answer at the floor's concurrency too", async (t) => {
  const dir = tempDir(t, 'quality-batched');
  const store = join(dir, 'store.db');
  const file = writeExperiment(dir, 'batched.yaml', {
    server: { command: simCommand({ tpotMs: 2 }), readyTimeout: '5m' },
    trials: 1,
    // One at a time its answers are the baseline's; in a batch every one departs in its second half.
    variants: { baseline: {}, batchy: { args: ['--batch-variance', '1'] } },
    quality: { equivalence: { prompts: PROMPTS, outputTokens: OUTPUT_TOKENS } },
  });
  const run = await cli(['run', file], { store, timeoutMs: 120_000 });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout + run.stderr, /equivalence: batchy answered 8\/8 prompts \(c=8, untimed\)/);
  const view = JSON.parse((await cli(['show', '1', '--json'], { store })).stdout);
  assert.equal(view.equivalence.floor.tokenAgreement, 1);
  const batchy = view.equivalence.variants[0];
  assert.notEqual(batchy.status, 'equivalent');
  assert.equal(batchy.worstAt, 'c=8');
  assert.ok(batchy.match.firstDivergence.min >= OUTPUT_TOKENS / 2, JSON.stringify(batchy.match.firstDivergence));
  // Feasible by default, with a note; infeasible when the objective asks for equivalent outputs.
  assert.deepEqual(
    view.best.ranking.find((row: { variant: string }) => row.variant === 'batchy').caveats.map((caveat: { kind: string }) => caveat.kind),
    ['note'],
  );
  assert.match(rankOf(bestUnder(store, { outputs: 'equivalent' }), 'batchy').violations.join(' '), /numerics-level divergence .*; needs equivalent/);
});

test('a lossless variant against a baseline whose batched answers vary: equivalent and feasible under outputs: equivalent; outputMatch >= 0.99 is warned of', async (t) => {
  const dir = tempDir(t, 'quality-floor');
  const store = join(dir, 'store.db');
  const file = writeExperiment(dir, 'floor.yaml', {
    // Both configs run one engine whose batched answers depart (GPU batch non-invariance); faster only decodes faster.
    server: { command: simCommand({ tpotMs: 4, extra: ['--batch-variance', '0.5'] }), readyTimeout: '5m' },
    trials: 2,
    variants: { baseline: {}, faster: { args: ['--tpot-ms', '2'] } },
    quality: { equivalence: { prompts: PROMPTS, outputTokens: OUTPUT_TOKENS } },
    objective: { maximize: 'outputTokensPerSecond', subjectTo: { outputs: 'equivalent' } },
  });
  const run = await cli(['run', file], { store, timeoutMs: 120_000 });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /subject to outputs equivalent/);
  const view = JSON.parse((await cli(['show', '1', '--json'], { store })).stdout);
  const { floor } = view.equivalence;
  t.diagnostic(`A/A floor: ${JSON.stringify(floor)}; faster: ${JSON.stringify(view.equivalence.variants[0])}`);
  assert.ok(floor.tokenAgreement < 0.99 && floor.tokenAgreement >= 0.5, `floor ${floor.tokenAgreement}`);
  assert.equal(view.equivalence.variants[0].status, 'equivalent');
  assert.equal(view.best.winner, 'faster');
  assert.deepEqual(view.best.warnings, []);

  // The docs' old example: a share the baseline itself misses rules out the lossless config, and says so.
  const strict = bestUnder(store, { outputMatch: { op: '>=', value: 0.99 } });
  assert.equal(rankOf(strict, 'faster').feasible, false);
  assert.equal(strict.warnings.length, 1);
  assert.match(
    strict.warnings[0]!,
    /^subjectTo\.outputMatch ">= 0\.99" is stricter than this run's A\/A floor: baseline agrees with itself on \d+\.\d% of tokens .*use subjectTo: \{ outputs: equivalent \}/,
  );
});

test('a baseline that disagrees with itself when batched makes equivalence inconclusive, not "equivalent"', async (t) => {
  const dir = tempDir(t, 'quality-broken');
  const store = join(dir, 'store.db');
  const file = writeExperiment(dir, 'broken.yaml', {
    profile: 'openai',
    // Batched, the baseline answers "a a a…" where alone it answers "the the the…": its A/A floor is broken.
    server: faultServerSection(['--tpot-ms', '5', '--batched-from', '0']),
    trials: 1,
    variants: { baseline: {}, other: { args: ['--tpot-ms', '4'] } },
    quality: { equivalence: { prompts: 4, outputTokens: 8 } },
  });
  const run = await cli(['run', file], { store, timeoutMs: 120_000 });
  assert.equal(run.code, 0, run.stderr);
  const view = JSON.parse((await cli(['show', '1', '--json'], { store })).stdout);
  t.diagnostic(`A/A floor: ${JSON.stringify(view.equivalence.floor)}`);
  assert.ok(view.equivalence.floor.tokenAgreement < 0.5, JSON.stringify(view.equivalence.floor));
  assert.equal(view.equivalence.variants[0].status, 'inconclusive');
  const text = (await cli(['show', '1'], { store })).stdout;
  assert.match(text, /other: inconclusive \(the baseline disagrees with itself: token agreement \d+\.\d% in its A\/A floor, below 50\.0%/);
  assert.match(text, /A\/A floor \(baseline vs itself: c=4\): .* \(broken: /);
  // Feasible by default, with a warning in the ranking; under outputs: equivalent, infeasible.
  assert.match(text, /warning: outputs inconclusive \(the baseline disagrees with itself/);
  assert.match(rankOf(bestUnder(store, { outputs: 'equivalent' }), 'other').violations.join(' '), /^outputs inconclusive .*; needs equivalent$/);
});

test('subjectTo: { outputs: equivalent } turns the check on; any other value, or "equivalent" on a metric, is refused with its key', async (t) => {
  const dir = tempDir(t, 'quality-file');
  const store = join(dir, 'store.db');
  const objective = (subjectTo: Record<string, string>) => ({ objective: { maximize: 'outputTokensPerSecond', subjectTo } });
  const experiment = loadExperiment(writeExperiment(dir, 'on.yaml', objective({ outputs: 'equivalent' })));
  assert.equal(experiment.objective?.outputs, 'equivalent');
  assert.deepEqual(experiment.quality?.equivalence, { prompts: 16, outputTokens: 128 });
  const refused: Array<[Record<string, string>, RegExp]> = [
    [{ outputs: '>= 0.95' }, /objective\.subjectTo\.outputs: expected "equivalent": outputs are judged by their status against the A\/A floor/],
    [{ ttftP99Ms: 'equivalent' }, /objective\.subjectTo\.ttftP99Ms: expected a comparison like "< 500"/],
  ];
  for (const [subjectTo, message] of refused) {
    const planned = await cli(['plan', writeExperiment(dir, 'off.yaml', objective(subjectTo))], { store });
    assert.equal(planned.code, 2, planned.stderr);
    assert.match(planned.stderr, message);
  }
});

test('compare-outputs on two saved bench files: identical servers agree, a lossy one does not', async (t) => {
  const dir = tempDir(t, 'compare');
  const store = join(dir, 'store.db');
  const fast = ['--port', '0', '--tpot-ms', '0', '--ttft-ms', '0', '--stats-interval-ms', '0'];
  const [reference, lossy] = await Promise.all([servingSimulator(t, fast), servingSimulator(t, [...fast, '--lossy', '0.2'])]);
  const bench = (url: string, name: string, concurrency: string) =>
    cli(['bench', url, '--concurrency', concurrency, '--requests', '12', '--output-len', '40', '--save-outputs', join(dir, name), '--no-progress'], { store });
  for (const result of await Promise.all([bench(reference, 'a.jsonl', '1'), bench(reference, 'b.jsonl', '6'), bench(lossy, 'c.jsonl', '3')])) {
    assert.equal(result.code, 0, result.stderr);
  }
  const line = JSON.parse(readFileSync(join(dir, 'a.jsonl'), 'utf8').split('\n')[0]!);
  assert.equal(line.tokenIds.length, 40);
  assert.equal(line.finishReason, 'length');

  const same = await cli(['compare-outputs', join(dir, 'a.jsonl'), join(dir, 'b.jsonl'), '--json'], { store });
  assert.equal(same.code, 0, same.stderr);
  const match = JSON.parse(same.stdout);
  assert.equal(match.prompts, 12);
  assert.equal(match.identicalShare, 1);
  assert.equal(match.tokenAgreement, 1);

  const changed = await cli(['compare-outputs', join(dir, 'a.jsonl'), join(dir, 'c.jsonl')], { store });
  assert.equal(changed.code, 0, changed.stderr);
  assert.match(changed.stdout, /token agreement {4}(7\d|8\d)\.\d%/);
  assert.match(changed.stdout, /earliest difference: prompt \d+ at \d+/);

  const missing = await cli(['compare-outputs', join(dir, 'a.jsonl'), join(dir, 'none.jsonl')], { store });
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read .*none\.jsonl/);
});
