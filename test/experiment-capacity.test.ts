/**
 * A capacity workload as an experiment's objective: each trial runs the real search (load/capacity.ts) on the fake
 * machine (support-fake-executor.ts: time per token grows in proportion to the concurrency), and the race and best
 * verdict use `sloCapacity` like any other metric.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { bestConfig, objectiveOf } from '../src/experiment/analysis/best.js';
import { workNotes } from '../src/experiment/analysis/work-notes.js';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { formatVerdicts } from '../src/experiment/text/format.js';
import { reportFigures } from '../src/report/figures.js';
import { verdictTableHtml } from '../src/report/html.js';
import { renderMarkdown } from '../src/report/markdown.js';
import { buildRunReport } from '../src/report/model.js';
import { loadConclusion, loadRunData } from '../src/report/queries.js';
import { openStore } from '../src/store/db.js';
import { getRun, listTrials } from '../src/store/queries.js';
import { tempDir, writeExperiment } from './support-experiment.js';
import { FakeExecutor } from './support-fake-executor.js';

test('maximize sloCapacity: the config with the highest capacity wins the race; each trial keeps its bisection path', async (t) => {
  const dir = tempDir(t, 'capacity');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  const file = writeExperiment(dir, 'capacity.yaml', {
    trials: 8,
    stopping: 'race',
    schedule: 'blocked',
    telemetry: { enabled: false },
    server: { command: ['fake-server', '--port', '{port}', '--tpot-ms', '4'], readyTimeout: '5m' },
    // TPOT = tpot x concurrency: the p99 limit of 31 ms is met up to c=10 at 3 ms, c=7 at 4 ms, c=6 at 5 ms.
    workloads: [{ kind: 'capacity', over: 'concurrency', min: 1, max: 16, requestsPerStep: 16, slo: { tpotP99Ms: 31 } }],
    objective: { maximize: 'sloCapacity' },
    grid: [{ name: 't{t}', params: { t: [3, 5] }, args: ['--tpot-ms', '{t}'] }],
  });
  const executor = new FakeExecutor((call) => ({ tpotMs: Number(call.arg('--tpot-ms')) }));
  const log: string[] = [];
  let runId = 0;
  try {
    const outcome = await runExperiment({ db, experiment: loadExperiment(file), executor, workDir: dir, log: (line) => log.push(line) });
    assert.equal(outcome.status, 'done', log.join('\n'));
    runId = outcome.runId;
  } finally {
    await executor.close();
  }
  assert.ok(
    log.some((line) => /^race decided after block \d+: t3 is significantly better than every other config$/.test(line)),
    log.join('\n'),
  );
  const rows = db.prepare('SELECT variant, workload, metrics_json FROM trials').all() as Array<{ variant: string; workload: string; metrics_json: string }>;
  const capacities = new Map<string, Set<number>>();
  for (const row of rows) {
    assert.equal(row.workload, 'capacity:c=1..16,tpot-p99=31ms');
    const metrics = JSON.parse(row.metrics_json);
    capacities.set(row.variant, (capacities.get(row.variant) ?? new Set()).add(metrics.sloCapacity));
    // Bisection from the geometric middle: 4 passes everywhere, then up or down until adjacent levels decide.
    assert.equal(metrics.capacity.steps[0].label, 'c=4');
    assert.equal(metrics.capacity.upper, metrics.sloCapacity + 1);
  }
  assert.deepEqual(Object.fromEntries([...capacities].map(([variant, values]) => [variant, [...values]])), { baseline: [7], t3: [10], t5: [6] });
  // The report judges the capacity workload on sloCapacity: its median column is headed so (the catalogue's header,
  // not the experiment's tok/s), and sloCapacity has its chart as tok/s has.
  const report = buildRunReport(loadRunData(db, runId)!);
  assert.match(renderMarkdown(report), /\| variant \| trials \| median SLO capacity \| change vs baseline \|/);
  assert.match(verdictTableHtml(report), /<th class="num">median SLO capacity<\/th>/);
  const figures = reportFigures(report);
  const capacityChart = figures.find((figure) => figure.id === 'slo-capacity');
  assert.ok(capacityChart, figures.map((figure) => figure.id).join(', '));
  assert.deepEqual(
    report.capacity.series.map((line) => [line.name, line.points]),
    [
      ['baseline', [['capacity:c=1..16,tpot-p99=31ms', 7]]],
      ['t3', [['capacity:c=1..16,tpot-p99=31ms', 10]]],
      ['t5', [['capacity:c=1..16,tpot-p99=31ms', 6]]],
    ],
  );
  assert.match(figures.find((figure) => figure.id === 'trials-0')!.svg, /SLO capacity per trial/);
  // What `show` and the report say of each config's searches.
  const notes = workNotes(listTrials(db, runId));
  const t3 = notes.find((note) => note.startsWith('t3 capacity:c=1..16,tpot-p99=31ms: capacity per trial 10 in flight, 10 in flight'));
  assert.match(t3 ?? notes.join('\n'), /; steps of the last: c=4 met, c=8 met, c=11 missed \(TPOT p99 33\.\d ms > 31\.0 ms\), c=9 met, c=10 met$/);
  assert.ok(
    notes.some((note) => /^t3 capacity:\S+: p99 of 16 requests per step is close to their slowest one; .* \(\d+ of \d+ trials\)$/.test(note)),
    notes.join('\n'),
  );
});

test('sloCapacity judges the capacity workload: the default objective workload, and refused on any other', (t) => {
  const dir = tempDir(t, 'capacity-objective');
  const capacity = { kind: 'capacity', over: 'concurrency', min: 1, max: 8, requestsPerStep: 8, slo: { tpotP99Ms: 30 } };
  const workloads = [{ kind: 'single-stream', requests: 2 }, capacity];
  const capacityLabel = 'capacity:c=1..8,tpot-p99=30ms';
  // Listed after a single-stream workload, which measures no capacity: the verdict used to rank nothing there.
  const withObjective = loadExperiment(writeExperiment(dir, 'objective.yaml', { workloads, objective: { maximize: 'sloCapacity' } }));
  assert.equal(withObjective.objective?.workload, capacityLabel);
  const metricOnly = loadExperiment(writeExperiment(dir, 'metric.yaml', { workloads, metric: 'sloCapacity' }));
  assert.equal(objectiveOf(metricOnly).workload, capacityLabel);
  assert.throws(
    () => loadExperiment(writeExperiment(dir, 'named.yaml', { workloads, objective: { maximize: 'sloCapacity', workload: 'single-stream' } })),
    /objective\.workload: sloCapacity is measured only by a capacity workload, and "single-stream" is a single-stream/,
  );
  assert.throws(
    () => loadExperiment(writeExperiment(dir, 'none.yaml', { workloads: [workloads[0]], metric: 'sloCapacity' })),
    /metric: sloCapacity is measured only by a capacity workload/,
  );
});

test("a config at the search's max is a lower bound: the best-config conclusion says so, with the next step", async (t) => {
  const dir = tempDir(t, 'capacity-max');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  const file = writeExperiment(dir, 'capacity.yaml', {
    trials: 2,
    telemetry: { enabled: false },
    server: { command: ['fake-server', '--port', '{port}', '--tpot-ms', '4'], readyTimeout: '5m' },
    // t3 meets the limit up to c=10, past max 8; the baseline (4 ms) up to c=7.
    workloads: [{ kind: 'capacity', over: 'concurrency', min: 1, max: 8, requestsPerStep: 16, slo: { tpotP99Ms: 31 } }],
    objective: { maximize: 'sloCapacity' },
    variants: { baseline: {}, t3: { args: ['--tpot-ms', '3'] } },
  });
  const executor = new FakeExecutor((call) => ({ tpotMs: Number(call.arg('--tpot-ms')) }));
  const experiment = loadExperiment(file);
  const outcome = await runExperiment({ db, experiment, executor, workDir: dir }).finally(() => executor.close());
  assert.equal(outcome.status, 'done', outcome.message);
  const verdict = bestConfig(experiment, listTrials(db, outcome.runId));
  assert.equal(verdict.winner, 't3');
  assert.match(verdict.conclusion, /; t3's capacity is the search's max in 2 of 2 trials \(≥ max\): raise max to rank it$/);
  assert.doesNotMatch(verdict.conclusion, /baseline's capacity is the search's max/);
});

test('no level meets the SLOs at c=1: the notes give the cause and no "lower min"; the verdict says why it is insufficient data', async (t) => {
  const dir = tempDir(t, 'capacity-none');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  const file = writeExperiment(dir, 'capacity.yaml', {
    trials: 2,
    telemetry: { enabled: false },
    server: { command: ['fake-server', '--port', '{port}', '--tpot-ms', '40'], readyTimeout: '5m' },
    // 40 ms per token alone, against a 31 ms limit: not even one request at a time meets it.
    workloads: [{ kind: 'capacity', over: 'concurrency', min: 1, max: 8, requestsPerStep: 16, slo: { tpotP99Ms: 31 } }],
    metric: 'sloCapacity',
    variants: { baseline: {}, t50: { args: ['--tpot-ms', '50'] } },
  });
  const executor = new FakeExecutor((call) => ({ tpotMs: Number(call.arg('--tpot-ms')) }));
  const experiment = loadExperiment(file);
  const outcome = await runExperiment({ db, experiment, executor, workDir: dir }).finally(() => executor.close());
  assert.equal(outcome.status, 'done', outcome.message);
  const notes = workNotes(listTrials(db, outcome.runId));
  assert.ok(
    notes.some((note) =>
      /^baseline capacity:\S+: 0: even one request at a time \(c=1\) missed the SLOs \(TPOT p99 40\.\d ms > 31\.0 ms\): no load meets them on this server; relax the SLOs or make the server faster \(2 of 2 trials\)$/.test(
        note,
      ),
    ),
    notes.join('\n'),
  );
  assert.ok(!notes.some((note) => note.includes('lower min')), notes.join('\n'));
  const verdicts = formatVerdicts(loadConclusion(db, getRun(db, outcome.runId)!, { ranking: false }), false);
  assert.match(
    verdicts,
    /\nt50 capacity:\S+: insufficient data: baseline's median sloCapacity is 0, so no ratio to it exists: no level of its searches met the SLOs \(`servelab show` gives the cause of each\)$/,
  );
});

test("a capacity workload's verdict is judged on sloCapacity, the other workloads' on the experiment's metric", async (t) => {
  const dir = tempDir(t, 'capacity-verdict');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  const file = writeExperiment(dir, 'mixed.yaml', {
    trials: 3,
    telemetry: { enabled: false },
    server: { command: ['fake-server', '--port', '{port}', '--tpot-ms', '4'], readyTimeout: '5m' },
    workloads: [
      { kind: 'single-stream', requests: 3 },
      { kind: 'capacity', over: 'concurrency', min: 1, max: 16, requestsPerStep: 16, slo: { tpotP99Ms: 31 } },
    ],
    variants: { baseline: {}, t3: { args: ['--tpot-ms', '3'] } },
  });
  const executor = new FakeExecutor((call) => ({ tpotMs: Number(call.arg('--tpot-ms')) }));
  const experiment = loadExperiment(file);
  const outcome = await runExperiment({ db, experiment, executor, workDir: dir }).finally(() => executor.close());
  assert.equal(outcome.status, 'done', outcome.message);
  const metricOf = Object.fromEntries((outcome.verdicts ?? []).map((verdict) => [verdict.workload.split(':')[0], verdict.metric]));
  // Before, both were outputTokensPerSecond: the capacity workload's tok/s mixes every level its search tried.
  assert.deepEqual(metricOf, { 'single-stream': 'outputTokensPerSecond', capacity: 'sloCapacity' });
  const capacity = outcome.verdicts!.find((verdict) => verdict.metric === 'sloCapacity')!;
  // TPOT = tpot × concurrency under a 31 ms p99 limit: c=7 at 4 ms, c=10 at 3 ms.
  assert.ok(capacity.baselineMedian! >= 6 && capacity.baselineMedian! <= 8, JSON.stringify(capacity));
  assert.ok(capacity.candidateMedian! > capacity.baselineMedian!, JSON.stringify(capacity));
  // Two metrics in one table: each figure carries its unit.
  const text = formatVerdicts(loadConclusion(db, getRun(db, outcome.runId)!, { ranking: false }), false);
  assert.match(text, /\nt3 +capacity:\S+ +[\d.]+ req\/s or in flight +[\d.]+ req\/s or in flight /);
  assert.match(text, /\nt3 +single-stream +[\d.]+ tok\/s +[\d.]+ tok\/s /);
});
