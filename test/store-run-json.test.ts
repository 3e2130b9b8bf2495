import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore } from '../src/store/db.js';
import { getRun } from '../src/store/queries.js';
import { RUN_JSON_VERSION } from '../src/store/run-json.js';
import { ensureExperiment, insertRun } from '../src/store/runs.js';
import { UserError } from '../src/util/errors.js';

const experiment = {
  name: 'e',
  filePath: '/x/e.yaml',
  baseline: 'a',
  metric: 'outputTokensPerSecond',
  trials: 1,
  variants: [{ name: 'a', serverKey: 'a' }],
  workloads: [{ label: 'w' }],
  verdict: { alpha: 0.05, minEffect: 0.02 },
};
const plan = { seed: 1, blocks: 1, restarts: 0, trials: [{ index: 0, block: 0, repetition: 0, variant: 'a', serverKey: 'a', workload: 'w' }] };

function freshStore() {
  const db = openStore(join(mkdtempSync(join(tmpdir(), 'servelab-runjson-')), 'store.db'));
  return { db, experimentId: ensureExperiment(db, 'e', '/x/e.yaml') };
}

/** A run row as servelab wrote it before the stored JSON carried a version. */
function insertRaw(db: ReturnType<typeof openStore>, experimentId: number, config: string, planJson: string, verdicts: string | null = null): number {
  const result = db
    .prepare(
      `INSERT INTO runs (experiment_id, started_at, status, servelab_version, config_json, plan_json, verdict_json) VALUES (?, '2026-01-01T00:00:00Z', 'done', '0.0.1', ?, ?, ?)`,
    )
    .run(experimentId, config, planJson, verdicts);
  return Number(result.lastInsertRowid);
}

test('a run row in the old, unversioned shape still reads', () => {
  const { db, experimentId } = freshStore();
  const verdicts = [{ variant: 'a', workload: 'w', metric: 'outputTokensPerSecond', baselineMedian: 1, candidateMedian: 1, significant: false }];
  const id = insertRaw(db, experimentId, JSON.stringify(experiment), JSON.stringify(plan), JSON.stringify(verdicts));
  const run = getRun(db, id)!;
  assert.deepEqual(run.config, experiment);
  assert.deepEqual(run.plan, plan);
  assert.deepEqual(run.verdicts, verdicts);
});

test('new rows are stamped with the version, and readers never see the stamp', () => {
  const { db, experimentId } = freshStore();
  const id = insertRun(db, { experimentId, servelabVersion: '1', config: experiment, plan });
  const raw = db.prepare('SELECT config_json, plan_json FROM runs WHERE id = ?').get(id) as { config_json: string; plan_json: string };
  assert.equal(JSON.parse(raw.config_json).schemaVersion, RUN_JSON_VERSION);
  assert.equal(JSON.parse(raw.plan_json).schemaVersion, RUN_JSON_VERSION);
  assert.deepEqual(getRun(db, id)!.config, experiment);
  assert.deepEqual(getRun(db, id)!.plan, plan);
});

test('a row not in a readable shape is a one-line error naming the run and the field', () => {
  const { db, experimentId } = freshStore();
  const broken = insertRaw(db, experimentId, JSON.stringify({ ...experiment, variants: 'a' }), JSON.stringify(plan));
  assert.throws(
    () => getRun(db, broken),
    (error: unknown) => error instanceof UserError && /run \d+: its stored experiment .*variants/.test(error.message) && !error.message.includes('\n'),
  );
  const newer = insertRaw(db, experimentId, JSON.stringify({ ...experiment, schemaVersion: RUN_JSON_VERSION + 1 }), JSON.stringify(plan));
  assert.throws(
    () => getRun(db, newer),
    (error: unknown) => error instanceof UserError && /newer than this servelab reads/.test(error.message),
  );
  const notJson = insertRaw(db, experimentId, JSON.stringify(experiment), '{');
  assert.throws(
    () => getRun(db, notJson),
    (error: unknown) => error instanceof UserError && /stored plan .*not valid JSON/.test(error.message),
  );
});
