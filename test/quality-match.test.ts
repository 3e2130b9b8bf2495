import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type EquivalenceReport, equivalenceStatus } from '../src/experiment/analysis/equivalence.js';
import { statusFeasibility } from '../src/experiment/analysis/feasibility.js';
import { compareOutputs } from '../src/metrics/output-match.js';
import type { RequestOutput } from '../src/metrics/types.js';
import { insertEquivalencePass, listEquivalencePasses } from '../src/store/equivalence.js';
import type { UnreadableRow } from '../src/store/row-json.js';
import { formatAgreement } from '../src/util/format.js';
import { buildFixtureRun, createFixtureStore } from './report-fixture.js';

/** The pure comparison and status rules of quality.equivalence and compare-outputs. */

const out = (prompt: number, text: string, extra: Partial<RequestOutput> = {}): RequestOutput => ({ prompt, level: 'c=1', text, ...extra });

test('the feasibility table: each status by default and under subjectTo: { outputs: equivalent }', () => {
  const report: EquivalenceReport = { baseline: 'base', floor: { identicalShare: 0, tokenAgreement: 0.3, comparisons: ['c=16'] }, variants: [] };
  const row = (status: Parameters<typeof statusFeasibility>[0], required: boolean) => {
    const { violations, caveats } = statusFeasibility(status, required, report);
    return violations.length > 0 ? 'infeasible' : caveats.length > 0 ? `feasible, with a ${caveats[0]!.kind}` : 'feasible';
  };
  const table = (['equivalent', 'numerics-level divergence', 'outputs changed', 'inconclusive', undefined] as const).map((status) => [
    status ?? 'not measured',
    row(status, false),
    row(status, true),
  ]);
  assert.deepEqual(table, [
    ['equivalent', 'feasible', 'feasible'],
    ['numerics-level divergence', 'feasible, with a note', 'infeasible'],
    ['outputs changed', 'infeasible', 'infeasible'],
    ['inconclusive', 'feasible, with a warning', 'infeasible'],
    ['not measured', 'feasible', 'infeasible'],
  ]);
  assert.deepEqual(statusFeasibility('inconclusive', false, report).caveats, [
    {
      kind: 'warning',
      text: 'outputs inconclusive (the baseline disagrees with itself: token agreement 30.0% in its A/A floor, below 50.0%; no config can be judged against it)',
    },
  ]);
});

test('answers compare by token ids where both sides have them, else by words; failures and one-sided prompts are counted apart', () => {
  const a = [out(0, 'a b c d', { tokenIds: [1, 2, 3, 4] }), out(1, 'x y', { tokenIds: [5, 6] }), out(2, 'p'), out(3, 'q', { error: 'stall' })];
  const b = [out(0, 'a b c d', { tokenIds: [1, 2, 3, 4] }), out(1, 'x z', { tokenIds: [5, 7] }), out(2, 'p'), out(3, 'q'), out(9, 'r')];
  const words = compareOutputs(a, b);
  assert.equal(words.unit, 'words');
  assert.deepEqual([words.prompts, words.identical, words.failed, words.unmatched], [3, 2, 1, 1]);
  assert.equal(words.tokenAgreement, 6 / 7);
  assert.deepEqual(words.firstDivergence, { median: 1, min: 1 });
  assert.deepEqual(words.earliest, { prompt: 1, position: 1, a: 'x y', b: 'x z' });
  const ids = compareOutputs(a.slice(0, 2), b.slice(0, 2));
  assert.equal(ids.unit, 'token ids');
  assert.equal(ids.tokenAgreement, 5 / 6);
});

test('an answer that is a prefix of the other diverges where the shorter ends; nothing compared leaves the shares unset', () => {
  const match = compareOutputs([out(0, 'a b c')], [out(0, 'a b')]);
  assert.equal(match.tokenAgreement, 1);
  assert.equal(match.identicalShare, 0);
  assert.deepEqual(match.firstDivergence, { median: 2, min: 2 });
  const none = compareOutputs([out(0, 'a')], [out(1, 'a')]);
  assert.equal(none.identicalShare, undefined);
  assert.equal(none.tokenAgreement, undefined);
});

test('status from the A/A floor: within it equivalent, late divergence numerics-level, early divergence changed, a broken floor inconclusive', () => {
  const match = (identicalShare: number, tokenAgreement: number, median?: number) => ({
    prompts: 16,
    identical: Math.round(identicalShare * 16),
    identicalShare,
    tokenAgreement,
    ...(median !== undefined && { firstDivergence: { median, min: median } }),
    unit: 'token ids' as const,
    unmatched: 0,
    failed: 0,
  });
  const exact = { identicalShare: 1, tokenAgreement: 1, comparisons: ['start 2'] };
  assert.equal(equivalenceStatus(match(1, 1), exact, 128), 'equivalent');
  assert.equal(equivalenceStatus(match(15 / 16, 0.999, 120), exact, 128), 'numerics-level divergence');
  assert.equal(equivalenceStatus(match(0, 0.88, 6), exact, 128), 'outputs changed');
  // A noisy floor (batching flips late tokens) admits as much noise, and a divergence no earlier than the floor's.
  const noisy = { identicalShare: 0.75, tokenAgreement: 0.98, earliestDivergence: 60, comparisons: ['c=16'] };
  assert.equal(equivalenceStatus(match(11 / 16, 0.97, 90), noisy, 128), 'equivalent');
  assert.equal(equivalenceStatus(match(0.25, 0.9, 70), noisy, 128), 'numerics-level divergence');
  assert.equal(equivalenceStatus(match(0.25, 0.9, 40), noisy, 128), 'outputs changed');
  // A floor under 50% token agreement would pass any answers (twice its disagreement is 100%): nothing is judged.
  const broken = { identicalShare: 0, tokenAgreement: 0.125, earliestDivergence: 0, comparisons: ['c=16'] };
  assert.equal(equivalenceStatus(match(0, 0, 0), broken, 128), 'inconclusive');
  assert.equal(equivalenceStatus(match(1, 1), broken, 128), 'inconclusive');
  assert.equal(equivalenceStatus(match(0.5, 0.9, 90), { ...broken, tokenAgreement: 0.5 }, 128), 'equivalent');
});

test('agreement never rounds up to 100%', () => {
  assert.equal(formatAgreement(0.9996), '99.9%');
  assert.equal(formatAgreement(1), '100%');
  assert.equal(formatAgreement(undefined), '—');
});

test('stored passes read back through the versioned decoder; an altered row is named and skipped', (t) => {
  const store = createFixtureStore();
  t.after(() => store.cleanup());
  const runId = buildFixtureRun(store);
  const outputs = [out(1, 'a b', { tokenIds: [1, 2], finishReason: 'length' })];
  insertEquivalencePass(store.db, runId, { variant: 'base', serverId: 1, concurrency: 1, startedAt: '2026-01-01T00:00:00Z', outputs });
  insertEquivalencePass(store.db, runId, { variant: 'base', serverId: 1, concurrency: 16, startedAt: '2026-01-01T00:00:01Z', outputs });
  store.db.prepare('UPDATE equivalence_outputs SET outputs_json = \'{"outputs": 3}\' WHERE concurrency = 16').run();
  const skipped: UnreadableRow[] = [];
  const passes = listEquivalencePasses(store.db, runId, skipped);
  assert.deepEqual(
    passes.map((pass) => [pass.concurrency, pass.outputs]),
    [[1, outputs]],
  );
  assert.equal(skipped.length, 1);
  assert.equal(skipped[0]!.table, 'equivalence_outputs');
  assert.equal(skipped[0]!.column, 'outputs_json');
});
