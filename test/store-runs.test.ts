import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { finalizeRun } from '../src/experiment/run/finalize.js';
import { createRun, loadRun } from '../src/experiment/run/run-store.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import type { Fingerprint } from '../src/fingerprint/types.js';
import type { RequestSample } from '../src/load/types.js';
import { openStore } from '../src/store/db.js';
import { getFingerprint, latestUnfinishedRun, listRuns, listTrials, trialHealth, trialSamples, variantHistory } from '../src/store/queries.js';
import type { UnreadableRow } from '../src/store/row-json.js';
import { insertInvalidTrial, insertTrial, type NewTrial, setRunStatus } from '../src/store/runs.js';
import type { TrialMetrics } from '../src/store/types.js';
import { tempDir } from './support-experiment.js';

const fingerprint = (proto?: string): Fingerprint => ({
  servelabVersion: '0.1.0',
  executor: 'local',
  host: { hostname: 'box', os: 'Linux', kernel: '6.8.0', cpuModel: 'EPYC', cpus: 64, memoryGiB: 503.5 },
  gpus: [],
  command: ['vllm', 'serve', 'm'],
  env: proto === undefined ? {} : { NCCL_PROTO: proto },
  packages: {},
});

const metrics = (tokensPerSecond: number): TrialMetrics => ({
  outputTokensPerSecond: tokensPerSecond,
  requestsPerSecond: 1,
  perStreamTokensPerSecond: tokensPerSecond,
  ttftMedianMs: 20,
  ttftP90Ms: 26,
  ttftP99Ms: 30,
  tpotMedianMs: 10,
  itlP99Ms: 12,
  e2eMedianMs: 700,
  completed: 2,
  failed: 0,
});

const samples: RequestSample[] = [
  { index: 0, sentAtMs: 1000, inputTokens: 16, outputTokens: 8, ttftMs: 20, itlMs: [10, 11], tpotMs: 10, e2eMs: 90 },
  { index: 1, sentAtMs: 1100, inputTokens: 16, outputTokens: 0, itlMs: [], error: { kind: 'http-5xx', message: 'HTTP 500' } },
];

function setup(t: Parameters<typeof tempDir>[0]) {
  const dir = tempDir(t, 'store');
  const file = join(dir, 'exp.yaml');
  writeFileSync(
    file,
    `name: store-test
profile: vllm
server: { command: [vllm, serve, m, --port, "{port}"] }
workloads: [{ kind: single-stream, requests: 2 }]
trials: 2
variants: { baseline: {}, fast: { args: [--fast] } }
`,
  );
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  return { db, experiment: loadExperiment(file) };
}

function trialOf(runId: number, variant: string, block: number, value: number): NewTrial {
  return {
    runId,
    variant,
    serverKey: variant,
    workload: 'single-stream',
    concurrency: 1,
    params: {},
    block,
    repetition: block,
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:00:01.000Z',
    metrics: metrics(value),
  };
}

describe('store: runs and trials', () => {
  test('a trial and its samples are stored once; a replay of the same trial is ignored', (t) => {
    const { db, experiment } = setup(t);
    const runId = createRun(db, experiment);
    const first = insertTrial(db, trialOf(runId, 'baseline', 0, 100), fingerprint('LL'), samples);
    assert.ok(first !== undefined);
    assert.equal(insertTrial(db, trialOf(runId, 'baseline', 0, 999), fingerprint('LL'), samples), undefined);
    const trials = listTrials(db, runId);
    assert.equal(trials.length, 1);
    assert.equal(trials[0]!.metrics.outputTokensPerSecond, 100);
    assert.deepEqual(trialSamples(db, first), samples);
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM samples').get() as { n: number }).n, 2);
  });

  test('a stored copy whose figures cannot be read is replaced by the trial measured again (else the run never completes)', (t) => {
    const { db, experiment } = setup(t);
    const runId = createRun(db, experiment);
    const first = insertTrial(db, trialOf(runId, 'baseline', 0, 100), fingerprint('LL'), samples)!;
    db.prepare(`UPDATE trials SET metrics_json = '{' WHERE id = ?`).run(first);
    assert.deepEqual(listTrials(db, runId), []);
    const again = insertTrial(db, trialOf(runId, 'baseline', 0, 101), fingerprint('LL'), samples);
    assert.ok(again !== undefined);
    assert.deepEqual(
      listTrials(db, runId).map((trial) => trial.metrics.outputTokensPerSecond),
      [101],
    );
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM samples').get() as { n: number }).n, 2);
  });

  test('scalar columns altered by hand: the row is named by table, row id and column, and left out; a trial so altered is replaced', (t) => {
    const { db, experiment } = setup(t);
    const runId = createRun(db, experiment);
    const first = insertTrial(db, trialOf(runId, 'baseline', 0, 100), fingerprint('LL'), samples)!;
    const [good, bad] = db.prepare('SELECT rowid AS id FROM samples WHERE trial_id = ? ORDER BY idx').all(first) as Array<{ id: number }>;
    db.prepare(`UPDATE samples SET output_tokens = 'abc' WHERE rowid = ?`).run(bad!.id);
    db.prepare(`UPDATE samples SET ttft_ms = 'soon' WHERE rowid = ?`).run(good!.id);
    const skipped: UnreadableRow[] = [];
    assert.deepEqual(trialSamples(db, first, skipped), []);
    assert.deepEqual(
      skipped.map((row) => [row.table, row.rowId, row.column]),
      [
        ['samples', good!.id, 'ttft_ms'],
        ['samples', bad!.id, 'output_tokens'],
      ],
    );
    assert.match(skipped[1]!.cause, /stored "abc"/);
    db.prepare(`UPDATE trials SET block = 'first' WHERE id = ?`).run(first);
    const trialsSkipped: UnreadableRow[] = [];
    assert.deepEqual(listTrials(db, runId, trialsSkipped), []);
    assert.deepEqual([trialsSkipped[0]!.table, trialsSkipped[0]!.column], ['trials', 'block']);
    db.prepare(`UPDATE trials SET block = 0, concurrency = 'one' WHERE id = ?`).run(first);
    assert.ok(insertTrial(db, trialOf(runId, 'baseline', 0, 101), fingerprint('LL'), samples) !== undefined, 'the altered copy is replaced');
    assert.deepEqual(
      listTrials(db, runId).map((trial) => trial.metrics.outputTokensPerSecond),
      [101],
    );
  });

  test('equal fingerprints share one row; a different one gets its own', (t) => {
    const { db, experiment } = setup(t);
    const runId = createRun(db, experiment);
    insertTrial(db, trialOf(runId, 'baseline', 0, 100), fingerprint('LL'), []);
    insertTrial(db, trialOf(runId, 'baseline', 1, 100), fingerprint('LL'), []);
    insertTrial(db, trialOf(runId, 'fast', 0, 100), fingerprint(), []);
    const [a, b, c] = listTrials(db, runId);
    assert.equal(a!.fingerprintId, b!.fingerprintId);
    assert.notEqual(a!.fingerprintId, c!.fingerprintId);
    assert.deepEqual(getFingerprint(db, a!.fingerprintId)!.env, { NCCL_PROTO: 'LL' });
  });

  test('the run keeps its resolved config and plan; listRuns is newest first; unfinished runs are found', (t) => {
    const { db, experiment } = setup(t);
    const first = createRun(db, experiment);
    const second = createRun(db, experiment);
    const { plan, experiment: stored } = loadRun(db, first);
    assert.equal(plan.trials.length, 2 * 1 * 2);
    assert.deepEqual(stored, JSON.parse(JSON.stringify(experiment)));
    assert.deepEqual(
      listRuns(db).map((run) => run.id),
      [second, first],
    );
    setRunStatus(db, second, 'done');
    assert.equal(latestUnfinishedRun(db, 'store-test')!.id, first);
    setRunStatus(db, first, 'interrupted', 'stopped by the user');
    assert.equal(latestUnfinishedRun(db, 'store-test')!.status, 'interrupted');
    setRunStatus(db, first, 'done');
    assert.equal(latestUnfinishedRun(db, 'store-test'), undefined);
  });

  test('variant history: valid trials of finished runs only (no drift-stopped, failed, unfinished or invalid ones)', (t) => {
    const { db, experiment } = setup(t);
    const old = createRun(db, experiment);
    insertTrial(db, trialOf(old, 'baseline', 0, 88), fingerprint('LL'), []);
    insertTrial(db, trialOf(old, 'fast', 0, 120), fingerprint('LL'), []);
    insertInvalidTrial(db, {
      runId: old,
      variant: 'baseline',
      serverKey: 'k',
      workload: 'single-stream',
      block: 1,
      repetition: 1,
      attempt: 0,
      startedAt: 'a',
      finishedAt: 'b',
      completed: 1,
      failed: 11,
      reason: 'server was killed by SIGKILL during the trial',
    });
    setRunStatus(db, old, 'done');
    const failed = createRun(db, experiment);
    insertTrial(db, trialOf(failed, 'baseline', 0, 70), fingerprint(), []);
    setRunStatus(db, failed, 'failed', 'server died');
    const concurrent = createRun(db, experiment);
    insertTrial(db, trialOf(concurrent, 'baseline', 0, 75), fingerprint(), []);
    const drifted = createRun(db, experiment);
    insertTrial(db, trialOf(drifted, 'baseline', 0, 60), fingerprint(), []);
    setRunStatus(db, drifted, 'drift', 'baseline moved');
    const current = createRun(db, experiment);
    insertTrial(db, trialOf(current, 'baseline', 0, 61), fingerprint(), []);
    const history = variantHistory(db, { experimentName: 'store-test', variant: 'baseline', workload: 'single-stream', excludeRunId: current });
    assert.deepEqual(
      history.map((trial) => trial.metrics.outputTokensPerSecond),
      [88],
    );
    assert.deepEqual(
      trialHealth(db, old).find((row) => row.variant === 'baseline'),
      {
        variant: 'baseline',
        workload: 'single-stream',
        failedRequests: 0,
        invalidTrials: 1,
        lastInvalidReason: 'server was killed by SIGKILL during the trial',
      },
    );
  });

  test('finalizeRun writes verdicts and "done" only when every planned trial is stored', (t) => {
    const { db, experiment } = setup(t);
    const runId = createRun(db, experiment);
    const { plan } = loadRun(db, runId);
    const [last, ...rest] = plan.trials;
    for (const trial of rest) insertTrial(db, trialOf(runId, trial.variant, trial.block, trial.variant === 'fast' ? 150 : 100), fingerprint('LL'), []);
    const partial = finalizeRun(db, runId);
    assert.equal(partial.status, 'running');
    assert.match(partial.message ?? '', /1 of 4 planned trials not measured/);
    insertTrial(db, trialOf(runId, last!.variant, last!.block, last!.variant === 'fast' ? 150 : 100), fingerprint('LL'), []);
    const done = finalizeRun(db, runId);
    assert.equal(done.status, 'done');
    assert.equal(done.verdicts!.length, 1);
    assert.equal(done.verdicts![0]!.variant, 'fast');
    assert.equal(done.verdicts![0]!.ratio, 1.5);
    const run = listRuns(db)[0]!;
    assert.equal(run.status, 'done');
    assert.deepEqual(run.verdicts, JSON.parse(JSON.stringify(done.verdicts)));
  });
});
