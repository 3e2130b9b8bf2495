import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { cdfPoints } from '../src/report/charts.js';
import { compareRuns } from '../src/report/compare.js';
import { renderHtmlReport } from '../src/report/html.js';
import { renderMarkdown } from '../src/report/markdown.js';
import { buildRunReport } from '../src/report/model.js';
import { loadRunData } from '../src/report/queries.js';
import { insertDriftAlarm } from '../src/store/drift-alarms.js';
import { buildFixtureRun, createFixtureStore } from './report-fixture.js';

describe('report model', () => {
  test('a finished run uses the verdicts the runner stored, with baseline rows and acceptance vs steps', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const report = buildRunReport(loadRunData(store.db, buildFixtureRun(store))!);
    assert.equal(report.verdictsFinal, true);
    assert.deepEqual(report.workloads, ['c=1', 'c=8', 'c=32']);
    assert.deepEqual(report.variants, ['baseline', 'eagle3-s2', 'eagle3-s4', 'eagle3-s6']);
    const baselineRow = report.rows.find((row) => row.variant === 'baseline' && row.workload === 'c=8')!;
    assert.equal(baselineRow.ratio, 1);
    assert.equal(baselineRow.label, 'baseline');
    const spec = report.rows.find((row) => row.variant === 'eagle3-s4' && row.workload === 'c=1')!;
    assert.equal(spec.label, 'faster');
    assert.ok(spec.ciLow! > 1 && spec.ciHigh! >= spec.ratio! && spec.ratio! >= spec.ciLow!);
    assert.equal(report.speedup.length, 9);
    assert.equal(report.acceptance?.parameter, 'steps');
    const acceptance = report.acceptance!.series[0]!.points.sort((a, b) => Number(a[0]) - Number(b[0]));
    assert.deepEqual(
      acceptance.map(([steps]) => steps),
      [2, 4, 6],
    );
    assert.ok(acceptance[0]![1] > acceptance[2]![1], 'acceptance falls with depth');
    assert.equal(report.latency?.workload, 'c=32');
    assert.equal(report.environment.distinctFingerprints, 4);
    assert.deepEqual(
      report.environment.variants.map((variant) => variant.changes.map((change) => change.key)),
      [['command'], ['command'], ['command']],
    );
    assert.deepEqual(report.driftNotes, []);
    assert.deepEqual(report.notes, []);
    assert.deepEqual(report.workNotes, []);
  });

  test('work notes are their own section, apart from drift notes: the report still says every variant kept one environment', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const runId = buildFixtureRun(store, { metrics: { resends: 2 } });
    const report = buildRunReport(loadRunData(store.db, runId)!);
    assert.deepEqual(report.driftNotes, []);
    assert.equal(report.workNotes.length, 12, report.workNotes.join('\n'));
    assert.ok(report.workNotes.every((note) => /requests resent after a kept-alive connection closed/.test(note)));
    const markdown = renderMarkdown(report);
    assert.match(markdown, /## Work notes\n\n.*\n\n- [\w-]+ c=\d+: 8 requests resent/);
    assert.match(markdown, /## Drift notes\n\nNone: every variant kept one environment throughout the run\./);
    const html = renderHtmlReport(report, []);
    assert.match(html, /<h2>Work notes<\/h2><p class="muted">[^<]*<\/p><ul class="notes"><li>[\w-]+ c=\d+: 8 requests resent/);
    assert.match(html, /<h2>Drift notes<\/h2><p class="muted">None: every variant kept one environment/);
  });

  test('a run in progress gets provisional verdicts from the trials stored so far', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const report = buildRunReport(loadRunData(store.db, buildFixtureRun(store, { trials: 20 }))!);
    assert.equal(report.status, 'running');
    assert.equal(report.verdictsFinal, false);
    assert.equal(report.trialCount, 20);
    assert.equal(report.plannedTrials, 48);
    assert.match(report.notes[0]!, /provisional: computed from 20 of 48 planned trials/);
  });

  test('a drift alarm accepted with --accept-drift is a note, read from its stored row', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const runId = buildFixtureRun(store);
    const alarm = {
      variant: 'baseline',
      workload: 'c=8',
      metric: 'outputTokensPerSecond',
      current: 70,
      reference: 100,
      changePct: -30,
      bandPct: 5,
      machine: [],
    };
    insertDriftAlarm(store.db, runId, {
      ...alarm,
      changes: [{ key: 'env.NCCL_PROTO', before: 'LL' }],
      accepted: true,
      message: 'drift alarm (c=8, noise band ±5%): baseline 70 tok/s vs 100 recorded (−30%)',
    });
    insertDriftAlarm(store.db, runId, { ...alarm, changes: [], accepted: false, message: 'not accepted: the status says it' });
    const data = loadRunData(store.db, runId)!;
    assert.deepEqual(
      data.driftAlarms?.map((row) => [row.accepted, row.changes]),
      [
        [true, [{ key: 'env.NCCL_PROTO', before: 'LL' }]],
        [false, []],
      ],
    );
    assert.deepEqual(buildRunReport(data).driftNotes, [
      'Drift alarm accepted with --accept-drift: drift alarm (c=8, noise band ±5%): baseline 70 tok/s vs 100 recorded (−30%)',
    ]);
  });

  test('comparing two runs flags the slowed-down one as drift and names the environment change', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const first = loadRunData(store.db, buildFixtureRun(store))!;
    const same = loadRunData(store.db, buildFixtureRun(store))!;
    const slower = loadRunData(store.db, buildFixtureRun(store, { scale: 0.7, env: { NCCL_ALGO: 'Tree' } }))!;
    const steady = compareRuns(first, same);
    assert.equal(steady.drifted, false);
    assert.deepEqual(steady.changes, []);
    const drifted = compareRuns(first, slower);
    assert.equal(drifted.drifted, true);
    assert.deepEqual(drifted.changes, [{ key: 'env.NCCL_ALGO', after: 'Tree' }]);
    const baseline = drifted.rows.find((row) => row.variant === 'baseline' && row.workload === 'c=1')!;
    assert.ok(baseline.check.changePct < -20);
    assert.match(baseline.alarm!, /^baseline .* recorded \(−\d+%\); environment differs: NCCL_ALGO \(unset\) → Tree$/);
  });

  test('CDF points are sorted, end at 1 and are thinned for long series', () => {
    assert.deepEqual(cdfPoints([30, 10, 20, Number.NaN]), [
      [10, 1 / 3],
      [20, 2 / 3],
      [30, 1],
    ]);
    const long = cdfPoints(
      Array.from({ length: 5000 }, (_, i) => i),
      400,
    );
    assert.ok(long.length <= 401);
    assert.deepEqual(long.at(-1), [4999, 1]);
  });
});
