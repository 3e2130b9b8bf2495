/**
 * Stores altered by hand (raw SQL on a real SQLite file): every view names the row it could not read and goes on
 * without it; medians, n and verdicts count the same trials.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { buildRunReport } from '../src/report/model.js';
import { loadRunData } from '../src/report/queries.js';
import type { Db } from '../src/store/db.js';
import { insertDriftAlarm } from '../src/store/drift-alarms.js';
import { variantHistory } from '../src/store/queries.js';
import { startUi } from '../src/ui/server.js';
import { buildFixtureRun, createFixtureStore, type FixtureStore } from './report-fixture.js';
import { cli, tempDir, writeExperiment } from './support-experiment.js';

/** The id of the n-th trial (0-based) of a variant and workload in a run. */
function trialId(db: Db, runId: number, variant: string, workload: string, n = 0): number {
  const rows = db.prepare('SELECT id FROM trials WHERE run_id = ? AND variant = ? AND workload = ? ORDER BY id').all(runId, variant, workload) as Array<{
    id: number;
  }>;
  return rows[n]!.id;
}

/** Two finished runs of one experiment; run 1's eagle3-s4 c=8 trials corrupted three ways, one more with no figure. */
function corruptedStore(): { store: FixtureStore; bad: { json: number; text: number; missing: number; nan: number } } {
  const store = createFixtureStore();
  buildFixtureRun(store);
  buildFixtureRun(store);
  const { db } = store;
  const bad = {
    json: trialId(db, 1, 'eagle3-s4', 'c=8', 0),
    text: trialId(db, 1, 'eagle3-s4', 'c=8', 1),
    missing: trialId(db, 1, 'eagle3-s4', 'c=8', 2),
    nan: trialId(db, 1, 'eagle3-s2', 'c=1', 0),
  };
  db.prepare(`UPDATE trials SET metrics_json = '{"outputTokensPerSecond": 12' WHERE id = ?`).run(bad.json);
  db.prepare(`UPDATE trials SET metrics_json = json_set(metrics_json, '$.outputTokensPerSecond', 'fast') WHERE id = ?`).run(bad.text);
  db.prepare(`UPDATE trials SET metrics_json = json_remove(metrics_json, '$.completed') WHERE id = ?`).run(bad.missing);
  // JSON has no NaN: a figure the trial could not measure is stored as null.
  db.prepare(`UPDATE trials SET metrics_json = json_set(metrics_json, '$.outputTokensPerSecond', json('null')) WHERE id = ?`).run(bad.nan);
  return { store, bad };
}

const NO_CRASH = /internal error|SyntaxError|Expected ','|\n\s+at /;

describe('corrupt store rows', () => {
  test('the report model names each unreadable row, and medians, n and verdicts count the same trials', (t) => {
    const { store, bad } = corruptedStore();
    t.after(() => store.cleanup());
    const report = buildRunReport(loadRunData(store.db, 1)!);
    for (const id of [bad.json, bad.text, bad.missing])
      assert.ok(
        report.notes.some((note) => note.includes(`trials row ${id}, column metrics_json`)),
        `row ${id} named: ${report.notes.join('\n')}`,
      );
    assert.ok(report.notes.some((note) => /^trial \d+\/48 \(eagle3-s2, c=1, block \d\)/.test(note) && note.includes('left out of medians, n and verdicts')));
    // The stored verdicts counted 4 trials a side; the report counts what it can read and says so.
    assert.equal(report.verdictsFinal, false);
    assert.ok(report.notes.some((note) => /verdicts recomputed/.test(note)));
    const s4 = report.rows.find((row) => row.variant === 'eagle3-s4' && row.workload === 'c=8')!;
    assert.equal(s4.trials, 1);
    assert.equal(s4.label, 'insufficient data');
    const s2 = report.rows.find((row) => row.variant === 'eagle3-s2' && row.workload === 'c=1')!;
    assert.equal(s2.trials, 3);
    assert.notEqual(s2.label, 'insufficient data');
  });

  test('drift history leaves unreadable rows of earlier runs out instead of failing the run', (t) => {
    const { store, bad } = corruptedStore();
    t.after(() => store.cleanup());
    const history = variantHistory(store.db, { experimentName: 'spec-decode-sweep', variant: 'eagle3-s4', workload: 'c=8', excludeRunId: 2 });
    assert.equal(history.length, 1);
    assert.ok(![bad.json, bad.text, bad.missing].includes(history[0]!.id));
  });

  test('a failed run says why exactly once, however many alarm rows it has (and without any)', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const quiet = buildFixtureRun(store, { trials: 10, status: 'failed', message: 'server crashed' });
    const noisy = buildFixtureRun(store, { trials: 10, status: 'interrupted' as 'failed', message: 'interrupted; measured trials are kept' });
    const alarm = { variant: 'baseline', workload: 'c=8', metric: 'outputTokensPerSecond', current: 70, reference: 100, changePct: -30, bandPct: 5 };
    for (const accepted of [false, false, true])
      insertDriftAlarm(store.db, noisy, { ...alarm, changes: [], machine: [], accepted, message: `alarm ${accepted}` });
    const quietNotes = buildRunReport(loadRunData(store.db, quiet)!).notes;
    assert.equal(quietNotes.filter((note) => note === 'Run failed: server crashed').length, 1, quietNotes.join('\n'));
    const noisyReport = buildRunReport(loadRunData(store.db, noisy)!);
    assert.equal(noisyReport.notes.filter((note) => note.startsWith('Run interrupted')).length, 1, noisyReport.notes.join('\n'));
    assert.equal(noisyReport.driftNotes.filter((note) => note.startsWith('Drift alarm accepted')).length, 1);
  });

  test('show, report, diff and ls as child processes: clean output naming the rows, exit 0; a run whose config is unreadable: exit 1, named', {
    timeout: 120_000,
  }, async (t) => {
    const { store, bad } = corruptedStore();
    t.after(() => store.cleanup());
    buildFixtureRun(store);
    store.db.prepare(`UPDATE runs SET config_json = '{"name": ' WHERE id = 3`).run();
    const path = store.path;

    const shown = await cli(['show', '1'], { store: path });
    assert.equal(shown.code, 0, shown.stderr);
    assert.doesNotMatch(shown.stdout + shown.stderr, NO_CRASH);
    for (const id of [bad.json, bad.text, bad.missing]) {
      assert.match(shown.stdout, new RegExp(`Left out \\(unreadable\\): trials row ${id}, column metrics_json`));
      assert.match(shown.stderr, new RegExp(`warning: left out trials row ${id}, column metrics_json`));
    }
    assert.match(shown.stdout, /trials row \d+, column metrics_json: not valid JSON/);
    assert.match(shown.stdout, /outputTokensPerSecond: .*string/i);
    assert.match(shown.stdout, /completed: /);
    // The verdict table counts what the medians count: 4 baseline trials against 1 readable eagle3-s4 trial.
    assert.match(shown.stdout, /eagle3-s4\s+c=8 .* 4\/1 /);

    const json = await cli(['show', '1', '--json'], { store: path });
    assert.equal(json.code, 0, json.stderr);
    const parsed = JSON.parse(json.stdout) as { unreadable: Array<{ table: string; rowId: number; column: string }>; trials: unknown[] };
    assert.deepEqual(
      parsed.unreadable.map((row) => row.rowId).sort((a, b) => a - b),
      [bad.json, bad.text, bad.missing].sort((a, b) => a - b),
    );
    assert.equal(parsed.trials.length, 45);

    const reported = await cli(['report', '1', '2', '--out', join(store.dir, 'report')], { store: path });
    assert.equal(reported.code, 0, reported.stderr);
    assert.doesNotMatch(reported.stdout + reported.stderr, NO_CRASH);
    const markdown = readFileSync(join(store.dir, 'report', 'run-1.md'), 'utf8').replaceAll('\\', '');
    for (const id of [bad.json, bad.text, bad.missing]) assert.ok(markdown.includes(`trials row ${id}, column metrics_json`), `report names row ${id}`);

    const diffed = await cli(['diff', '1', '2'], { store: path });
    assert.equal(diffed.code, 0, diffed.stderr);
    assert.doesNotMatch(diffed.stdout + diffed.stderr, NO_CRASH);

    const listed = await cli(['ls'], { store: path });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stderr, /warning: left out runs row 3, column config_json: not valid JSON/);
    assert.match(listed.stdout, /^2\s+spec-decode-sweep/m);

    const broken = await cli(['show', '3'], { store: path });
    assert.equal(broken.code, 1);
    assert.match(broken.stderr, /run 3: its stored experiment \(runs row 3, column config_json\) is not in a shape servelab reads \(not valid JSON\)/);
    assert.doesNotMatch(broken.stderr, NO_CRASH);

    const ui = await startUi({ storePath: path, host: '127.0.0.1', port: 0 });
    t.after(() => ui.close());
    for (const [route, status] of [
      ['/api/experiments', 200],
      ['/api/runs/1', 200],
      ['/api/runs/2', 200],
      ['/api/diff?a=1&b=2', 200],
      ['/api/runs/3', 422],
    ] as const) {
      const response = await fetch(new URL(route, ui.url));
      const body = await response.text();
      assert.equal(response.status, status, `${route}: ${body}`);
      assert.doesNotMatch(body, /internal error/);
      if (status === 422) assert.match(body, /runs row 3, column config_json/);
    }
  });

  test('a run whose drift history holds an unreadable row of an earlier run: runs to the end, warning once about the row', { timeout: 180_000 }, async (t) => {
    const dir = tempDir(t, 'corrupt-history');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'exp.yaml', { trials: 2 });
    const first = await cli(['run', file], { store });
    assert.equal(first.code, 0, first.stderr);
    const db = new Database(store);
    db.prepare(`UPDATE trials SET metrics_json = '{"outputTokensPerSecond": 1' WHERE id = 1`).run();
    db.close();
    const second = await cli(['run', file], { store });
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stdout, /run 2 done/);
    const warnings = second.stderr.split('\n').filter((line) => line.startsWith('warning: left out trials row 1, column metrics_json: not valid JSON'));
    assert.equal(warnings.length, 1, second.stderr);
  });

  test('a running run whose runner stopped its heartbeat shows as interrupted with a resume hint; a missing store reads the same in ls and report', {
    timeout: 60_000,
  }, async (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const stale = buildFixtureRun(store, { trials: 5 });
    const live = buildFixtureRun(store, { trials: 5 });
    const lease = store.db.prepare(
      'INSERT INTO run_leases (lease_key, run_id, host, pid, process_start, acquired_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    const old = new Date(Date.now() - 10 * 60_000).toISOString();
    lease.run(String(stale), stale, 'elsewhere', 4242, 'x', old, old);
    // A heartbeat far ahead stays fresh however slow this test runs.
    const fresh = new Date(Date.now() + 60 * 60_000).toISOString();
    lease.run(String(live), live, 'elsewhere', 4243, 'y', fresh, fresh);

    const listed = await cli(['ls'], { store: store.path });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${stale}\\s+\\S+\\s+interrupted .*--resume ${stale}`, 'm'));
    assert.match(listed.stdout, new RegExp(`^${live}\\s+\\S+\\s+running `, 'm'));
    const shown = await cli(['show', String(stale)], { store: store.path });
    assert.match(shown.stdout, new RegExp(`status: interrupted — runner gone \\(no heartbeat since ${old}\\); resume: \`servelab run --resume ${stale}\``));
    // Derived when read, never written.
    assert.equal((store.db.prepare('SELECT status FROM runs WHERE id = ?').get(stale) as { status: string }).status, 'running');
    const report = buildRunReport(loadRunData(store.db, stale)!);
    assert.equal(report.status, 'interrupted');
    assert.ok(report.notes.some((note) => note.includes(`servelab run --resume ${stale}`)));

    const missing = join(store.dir, 'nowhere', 'servelab.db');
    const results = await Promise.all([cli(['ls'], { store: missing }), cli(['report'], { store: missing }), cli(['show', '1'], { store: missing })]);
    const lines = results.map((result) => result.stderr.split('\n').find((line) => line.startsWith('servelab: ')));
    for (const result of results) assert.equal(result.code, 1, result.stderr);
    assert.equal(new Set(results.map((result) => result.stderr)).size, 1, results.map((result) => result.stderr).join('\n'));
    assert.equal(lines[0], `servelab: no store at ${missing}`);
  });
});
