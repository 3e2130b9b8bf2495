/**
 * The metric catalogue (src/metrics/catalog.ts) is the one place a metric is spelled: every entry is measured into
 * a trial record, stored in and decoded from a real SQLite store, exported, shown, named by experiment files, and
 * judged in the direction the entry says.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { computeVerdicts } from '../src/experiment/analysis/verdicts.js';
import { loadRun } from '../src/experiment/run/run-store.js';
import { categoryRows } from '../src/experiment/spec/categories.js';
import { trialMetricsOf } from '../src/experiment/spec/metrics.js';
import { sideColumns, sideFigures } from '../src/experiment/spec/side-figures.js';
import { METRIC_NAMES } from '../src/experiment/spec/types.js';
import { formatSpecView, SPEC_VIEW_METRICS } from '../src/experiment/text/best-format.js';
import { renderExperimentFileDoc } from '../src/experiment/text/file-doc.js';
import { formatCategoryRows } from '../src/experiment/text/format.js';
import { CATEGORY_METRICS, METRIC_ENTRIES, METRICS, metricsWhere } from '../src/metrics/catalog.js';
import { summarize } from '../src/metrics/summary.js';
import type { LevelResult } from '../src/metrics/types.js';
import { trialTable } from '../src/report/export-table.js';
import { decodeTrialMetrics, encodeTrialMetrics, TRIAL_METRICS_VERSION } from '../src/store/columns.js';
import { listTrials } from '../src/store/queries.js';
import type { TrialMetrics } from '../src/store/types.js';
import type { GpuSample } from '../src/telemetry/types.js';
import { buildFixtureRun, createFixtureStore } from './report-fixture.js';
import { trialRecord } from './support-trial-record.js';

/** A level with every figure the catalogue reads: spec stats, prefix-cache hits, a capacity result, categories. */
function fullLevel(): LevelResult {
  const summary = (values: number[]) => summarize(values);
  const base = {
    durationS: 2,
    completed: 4,
    failed: 0,
    errorsByKind: {},
    ttftMs: summary([10, 12, 14, 40]),
    itlMs: summary([3, 4, 5, 9]),
    tpotMs: summary([4, 4.5, 5, 6]),
    e2eMs: summary([100, 110, 120, 200]),
    outputTokensPerSecondPerStream: summary([180, 200, 210, 220]),
    outputTokensPerSecond: 400,
    totalTokensPerSecond: 600,
    requestsPerSecond: 2,
    spec: { source: 'test', acceptanceRate: 0.7, meanAcceptedLength: 2.4, verifyStepMs: 8.5 },
  };
  return {
    ...base,
    label: 'c=2',
    concurrency: 2,
    prefixCache: { hitRate: 0.5 } as LevelResult['prefixCache'],
    capacity: { value: 6, steps: [], notes: [] } as unknown as LevelResult['capacity'],
    categories: [{ ...base, category: 'chat' }],
    samples: [0, 1, 2, 3].map((index) => ({
      index,
      sentAtMs: 1000 + index * 100,
      inputTokens: 10,
      outputTokens: 20,
      ttftMs: 10,
      itlMs: [4],
      tpotMs: 4,
      e2eMs: 100,
    })),
  };
}

/** Two GPUs drawing 300 W each throughout the level. */
const GPU_SAMPLES = [0, 1].flatMap((index) => [0, 5000].map((at) => ({ index, at, powerW: 300 }))) as GpuSample[];

describe('metric catalogue', () => {
  test('every metric is measured from a level, stored, decoded, exported and shown; NaN is never 0', (t) => {
    const metrics = trialMetricsOf(fullLevel(), { gpuSamples: GPU_SAMPLES, cost: { gpuHourUsd: 3.6, gpus: 2 } });
    for (const [name] of METRIC_ENTRIES) assert.ok(Number.isFinite(metrics[name]), `${name} measured: ${metrics[name]}`);
    assert.equal(metrics.joulesPerToken, 600 / 400);
    assert.equal(metrics.usdPerMillionTokens, (3.6 * 2 * 1e6) / (3600 * 400));
    for (const name of CATEGORY_METRICS) assert.ok(Number.isFinite(metrics.byCategory!.chat![name]), `byCategory.chat.${name}`);

    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const runId = buildFixtureRun(store, { trials: 2, status: 'running' });
    const [first, second] = listTrials(store.db, runId);
    // The second trial's server reported no acceptance: NaN in memory, null in JSON.
    const unmeasured: TrialMetrics = {
      ...metrics,
      acceptanceRate: Number.NaN,
      byCategory: { chat: { ...metrics.byCategory!.chat!, acceptanceRate: Number.NaN } },
    };
    const update = store.db.prepare('UPDATE trials SET metrics_json = ? WHERE id = ?');
    update.run(encodeTrialMetrics(metrics), first!.id);
    // Stored with its keys in another order, as older versions wrote them (energy first).
    update.run(encodeTrialMetrics(Object.fromEntries(Object.entries(unmeasured).reverse()) as unknown as TrialMetrics), second!.id);
    const [stored, storedNaN] = listTrials(store.db, runId);
    for (const [name] of METRIC_ENTRIES) assert.equal(stored!.metrics[name], metrics[name], `${name} stored and decoded`);
    assert.ok(Number.isNaN(storedNaN!.metrics.acceptanceRate), 'a stored null reads back as NaN, not null');
    assert.ok(Number.isNaN(storedNaN!.metrics.byCategory!.chat!.acceptanceRate));

    const exported = trialTable([stored!, storedNaN!]);
    const column = (name: string) => exported.columns.findIndex((entry) => entry.name === name);
    for (const [name] of METRIC_ENTRIES) assert.equal(exported.rows[0]![column(name)], metrics[name], `export column ${name}`);
    assert.equal(exported.rows[1]![column('acceptanceRate')], null, 'not measured exports as an empty cell');
    const order = METRIC_ENTRIES.map(([name]) => column(name));
    assert.deepEqual(
      order,
      [...order].sort((a, b) => a - b),
      'metric columns in catalogue order',
    );
    // A row stored in another key order alone still exports the figures in catalogue order.
    const alone = trialTable([storedNaN!]).columns.map((entry) => entry.name);
    assert.ok(alone.indexOf('outputTokensPerSecond') < alone.indexOf('powerW'), alone.join(','));

    // Shown: the speculative view, the side figures and the per-category table each list their catalogue entries.
    const { experiment } = loadRun(store.db, runId);
    const onlyNaN = formatSpecView(experiment, [storedNaN!]);
    const acceptanceColumn = SPEC_VIEW_METRICS.indexOf('acceptanceRate') + 2;
    const row = onlyNaN.split('\n').find((line) => line.includes(storedNaN!.variant) && line.includes(storedNaN!.workload))!;
    assert.equal(row.trim().split(/\s{2,}/)[acceptanceColumn], '-', `acceptance not measured shows "-": ${row}`);
    assert.match(formatSpecView(experiment, [stored!]), /70%/);
    const side = sideColumns([{ side: sideFigures([stored!]) }]);
    assert.deepEqual(
      side.map((entry) => entry.title),
      metricsWhere((def) => def.side).map((name) => METRICS[name].header),
    );
    const categories = formatCategoryRows(categoryRows([stored!]));
    for (const name of CATEGORY_METRICS.filter((metric) => METRICS[metric].group !== 'speculative')) {
      assert.ok(categories.includes(METRICS[name].header), `per-category header ${METRICS[name].header}`);
    }
    assert.match(categories, /70%\/2\.40\/8\.50/);

    // The experiment file names exactly the judged metrics, each in the reference with its unit and direction.
    assert.deepEqual(
      [...METRIC_NAMES],
      metricsWhere((def) => def.judged),
    );
    const reference = renderExperimentFileDoc();
    for (const name of METRIC_NAMES)
      assert.ok(reference.includes(`| \`${name}\` | ${METRICS[name].unit} | ${METRICS[name].better} |`), `reference row of ${name}`);
  });

  test('verdicts judge each metric in its catalogue direction', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const { experiment } = loadRun(store.db, buildFixtureRun(store, { trials: 0, status: 'running' }));
    const candidate = experiment.variants.find((variant) => variant.name !== experiment.baseline)!.name;
    const workload = experiment.workloads[0]!.label;
    for (const metric of METRIC_NAMES) {
      const better = METRICS[metric].better === 'higher' ? 1.2 : 0.8;
      const trials = [100, 101, 99, 100.5, 99.5].flatMap((value) => [
        trialRecord(experiment.baseline, workload, { [metric]: value }),
        trialRecord(candidate, workload, { [metric]: value * better }),
      ]);
      const verdict = computeVerdicts({ ...experiment, metric }, trials).find((entry) => entry.variant === candidate && entry.workload === workload)!;
      assert.equal(verdict.label, 'faster', `${metric}: ${better > 1 ? 'higher' : 'lower'} is better`);
    }
  });

  test('a stored row keeps its figures readable: null is NaN, a missing required figure is refused', () => {
    const metrics = trialMetricsOf(fullLevel());
    const decoded = decodeTrialMetrics(1, JSON.stringify({ ...metrics, ttftMedianMs: null, schemaVersion: TRIAL_METRICS_VERSION }));
    assert.ok(Number.isNaN(decoded.ttftMedianMs));
    const { outputTokensPerSecond: _dropped, ...missing } = metrics;
    assert.throws(() => decodeTrialMetrics(7, JSON.stringify(missing)), /trials row 7, column metrics_json.*outputTokensPerSecond/);
    // A figure added later (its `since`): rows stamped before it lack it and read as not measured; newer rows must have it.
    for (const [name, def] of METRIC_ENTRIES.filter(([, entry]) => entry.always && entry.since !== undefined)) {
      const { [name]: _added, ...older } = metrics;
      assert.ok(Number.isNaN(decodeTrialMetrics(2, JSON.stringify({ ...older, schemaVersion: def.since! - 1 }))[name]), `${name} in an older row`);
      assert.throws(
        () => decodeTrialMetrics(3, JSON.stringify({ ...older, schemaVersion: def.since })),
        new RegExp(`${name}: absent in a version ${def.since} row`),
      );
    }
  });
});
