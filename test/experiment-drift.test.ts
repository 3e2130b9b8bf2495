import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

describe('reference guard', () => {
  test('a removed env var stops the next run before its first trial, naming it; accepted it measures; an unchanged rerun proceeds', async (t) => {
    const dir = tempDir(t, 'guard');
    const store = join(dir, 'servelab.db');
    const common = { name: 'nccl-guard', trials: 2, workloads: [{ kind: 'single-stream', requests: 2 }] };
    const tuned = writeExperiment(dir, 'tuned.yaml', { ...common, server: { command: simCommand(), env: { NCCL_PROTO: 'LL' }, readyTimeout: '5m' } });
    const untuned = writeExperiment(dir, 'untuned.yaml', { ...common, server: { command: simCommand(), readyTimeout: '5m' } });

    const first = await cli(['run', tuned], { store });
    assert.equal(first.code, 0, first.stderr);
    // A first run has no reference: nothing to compare, it proceeds.
    assert.doesNotMatch(first.stderr, /differs from/);

    const stopped = await cli(['run', untuned], { store });
    assert.notEqual(stopped.code, 0, stopped.stderr);
    assert.match(
      stopped.stderr,
      /configuration of baseline differs from run 1 \(the last finished run of "nccl-guard"\), before any trial:\n {2}NCCL_PROTO LL → \(unset\)/,
    );
    assert.match(stopped.stderr, /environment of baseline differs from run 1 .*: NCCL_PROTO LL → \(unset\); nothing was measured/);
    assert.match(stopped.stderr, /--accept-env-change/);
    assert.doesNotMatch(stopped.stderr, /trial 1\/2/);
    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const trialsOf = (runId: number) => (db.prepare('SELECT COUNT(*) AS n FROM trials WHERE run_id = ?').get(runId) as { n: number }).n;
    const statusOf = (runId: number) => (db.prepare('SELECT status FROM runs WHERE id = ?').get(runId) as { status: string }).status;
    assert.equal(trialsOf(2), 0);
    assert.equal(statusOf(2), 'failed');

    const accepted = await cli(['run', untuned, '--accept-env-change'], { store });
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.match(accepted.stderr, /NCCL_PROTO LL → \(unset\)\nmeasuring anyway \(--accept-env-change\)/);
    assert.equal(trialsOf(3), 2);

    // Unchanged against the last finished run (3): no difference printed, measured to the end.
    const rerun = await cli(['run', untuned], { store });
    assert.equal(rerun.code, 0, rerun.stderr);
    assert.doesNotMatch(rerun.stderr, /differs from/);
    assert.equal(statusOf(4), 'done');
  });
});

describe('drift alarm', () => {
  test('a slowdown the fingerprint cannot see stops the run at its second trial; diff judges it the same way', async (t) => {
    const dir = tempDir(t, 'drift');
    const store = join(dir, 'servelab.db');
    // SIM_BUSY matches no capture pattern: like a busy machine, it slows the simulator 2× without a configuration change.
    const command = simCommand({ tpotMs: 6, extra: ['--env-speedup', 'SIM_BUSY=1:0.5'] });
    const common = {
      name: 'hidden-slowdown',
      // Time per output token: the figure the env factor changes; 6-12 ms steps keep timer noise of a busy machine small.
      metric: 'tpotMedianMs',
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 32, seed: 3 }, warmupRequests: 1 },
      workloads: [{ kind: 'single-stream', requests: 4 }],
    };
    // Eight trials of history: with three, the small-sample band is (rightly) too wide to guard anything.
    const quiet = writeExperiment(dir, 'quiet.yaml', { ...common, trials: 8, server: { command, readyTimeout: '5m' } });
    const busy = writeExperiment(dir, 'busy.yaml', { ...common, trials: 3, server: { command, env: { SIM_BUSY: '1' }, readyTimeout: '5m' } });

    const first = await cli(['run', quiet], { store });
    assert.equal(first.code, 0, first.stderr);

    const second = await cli(['run', busy], { store });
    assert.notEqual(second.code, 0, `a drift alarm is a failure; runs:\n${first.stderr}\n${second.stderr}`);
    assert.doesNotMatch(second.stderr, /differs from run/);
    assert.match(second.stderr, /drift alarm \(single-stream, noise band ±\d+%\): baseline [\d.]+ ms vs [\d.]+ recorded \(\+\d+%\); environment identical/);
    assert.match(second.stderr, /--accept-drift/);

    // The first trial raised the suspicion, the second confirmed it; the rest of the run was not spent.
    assert.match(second.stderr, /confirming with its next trial/);
    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const runs = db.prepare('SELECT id, status FROM runs ORDER BY id').all() as Array<{ id: number; status: string }>;
    assert.deepEqual(
      runs.map((run) => run.status),
      ['done', 'drift'],
    );
    const trialsOf = (runId: number) => (db.prepare('SELECT COUNT(*) AS n FROM trials WHERE run_id = ?').get(runId) as { n: number }).n;
    assert.equal(trialsOf(2), 2);
    // The alarm is a row: what moved, by how much against which band.
    const alarms = db.prepare('SELECT variant, workload, metric, change_pct, band_pct, accepted FROM drift_alarms WHERE run_id = 2').all() as Array<{
      variant: string;
      workload: string;
      metric: string;
      change_pct: number;
      band_pct: number;
      accepted: number;
    }>;
    assert.equal(alarms.length, 1);
    assert.deepEqual([alarms[0]!.variant, alarms[0]!.workload, alarms[0]!.accepted], ['baseline', 'single-stream', 0]);
    assert.ok(Math.abs(alarms[0]!.change_pct) > alarms[0]!.band_pct, JSON.stringify(alarms[0]));
    const shown = await cli(['show', '2'], { store });
    assert.match(shown.stdout, /drift alarms:\n {2}drift alarm \(single-stream, noise band/);

    // `diff` applies the same rule to the same trials: the same change, band and verdict as the runner's alarm.
    const json = await cli(['diff', '1', '2', '--json'], { store });
    assert.equal(json.code, 0, json.stderr);
    const comparison = JSON.parse(json.stdout) as {
      drifted: boolean;
      environmentVariant: string;
      changes: unknown[];
      rows: Array<{ variant: string; workload: string; status: string; check: { changePct: number; band: number }; alarm?: string }>;
    };
    assert.equal(comparison.environmentVariant, 'baseline');
    assert.deepEqual(comparison.changes, []);
    assert.equal(comparison.drifted, true);
    const row = comparison.rows.find((candidate) => candidate.variant === 'baseline' && candidate.workload === 'single-stream')!;
    assert.equal(row.status, 'DRIFT');
    assert.ok(Math.abs(row.check.changePct - alarms[0]!.change_pct) < 1e-9, `${row.check.changePct} vs ${alarms[0]!.change_pct}`);
    assert.ok(Math.abs(row.check.band - alarms[0]!.band_pct) < 1e-9, `${row.check.band} vs ${alarms[0]!.band_pct}`);
    const diff = await cli(['diff', '1', '2'], { store });
    assert.match(diff.stdout, /baseline: identical/);
    assert.match(diff.stdout, /baseline\s+single-stream\s+[\d.]+\s+[\d.]+\s+\+\d+\.\d%\s+±[\d.]+%\s+DRIFT/);
    assert.match(diff.stdout, /drift alarms:/);

    // Accepting the drift finishes and records the run.
    const accepted = await cli(['run', busy, '--resume', '--accept-drift'], { store });
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.equal((db.prepare('SELECT status FROM runs WHERE id = 2').get() as { status: string }).status, 'done');
    assert.equal(trialsOf(2), 3);
  });
});
