import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

describe('drift alarm', () => {
  test('a removed env var that made the baseline fast stops the next run, naming the variable', async (t) => {
    const dir = tempDir(t, 'drift');
    const store = join(dir, 'servelab.db');
    // The simulator decodes 2× faster when NCCL_PROTO=LL, like a tuned NCCL protocol on real hardware.
    const command = simCommand({ tpotMs: 12, extra: ['--env-speedup', 'NCCL_PROTO=LL:2'] });
    const common = {
      name: 'nccl-tuned',
      // Time per output token: the figure the env speedup changes; 6-12 ms steps keep timer noise of a busy machine small.
      metric: 'tpotMedianMs',
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 32, seed: 3 }, warmupRequests: 1 },
      workloads: [{ kind: 'single-stream', requests: 4 }],
    };
    // Eight trials of history: with three, the small-sample band is (rightly) too wide to guard anything.
    const tuned = writeExperiment(dir, 'tuned.yaml', { ...common, trials: 8, server: { command, env: { NCCL_PROTO: 'LL' }, readyTimeout: '5m' } });
    const untuned = writeExperiment(dir, 'untuned.yaml', { ...common, trials: 3, server: { command, readyTimeout: '5m' } });

    const first = await cli(['run', tuned], { store });
    assert.equal(first.code, 0, first.stderr);

    const second = await cli(['run', untuned], { store });
    assert.notEqual(second.code, 0, `a drift alarm is a failure; runs:\n${first.stderr}\n${second.stderr}`);
    assert.match(
      second.stderr,
      /drift alarm \(single-stream, noise band ±\d+%\): baseline [\d.]+ ms vs [\d.]+ recorded \(\+\d+%\); environment differs: .*NCCL_PROTO LL → \(unset\)/,
    );
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
    // The alarm is a row: what moved, by how much against which band, and what differed.
    const alarms = db
      .prepare('SELECT variant, workload, metric, change_pct, band_pct, changes_json, accepted FROM drift_alarms WHERE run_id = 2')
      .all() as Array<{
      variant: string;
      workload: string;
      metric: string;
      change_pct: number;
      band_pct: number;
      changes_json: string;
      accepted: number;
    }>;
    assert.equal(alarms.length, 1);
    assert.deepEqual([alarms[0]!.variant, alarms[0]!.workload, alarms[0]!.accepted], ['baseline', 'single-stream', 0]);
    assert.ok(Math.abs(alarms[0]!.change_pct) > alarms[0]!.band_pct, JSON.stringify(alarms[0]));
    assert.match(alarms[0]!.changes_json, /NCCL_PROTO/);
    const shown = await cli(['show', '2'], { store });
    assert.match(shown.stdout, /drift alarms:\n {2}drift alarm \(single-stream, noise band/);

    const diff = await cli(['diff', '1', '2'], { store });
    assert.equal(diff.code, 0, diff.stderr);
    assert.match(diff.stdout, /baseline: .*NCCL_PROTO LL → \(unset\)/);
    assert.match(diff.stdout, /baseline\s+single-stream\s+[\d.]+\s+[\d.]+\s+\+\d+\.\d%/);
    // The same comparison the UI shows, machine-readable: the drift the runner stopped on is in it.
    const json = await cli(['diff', '1', '2', '--json'], { store });
    assert.equal(json.code, 0, json.stderr);
    const comparison = JSON.parse(json.stdout) as {
      drifted: boolean;
      environmentVariant: string;
      rows: Array<{ variant: string; workload: string; alarm?: string }>;
    };
    assert.equal(comparison.environmentVariant, 'baseline');
    assert.equal(comparison.drifted, true);
    assert.match(comparison.rows.find((row) => row.variant === 'baseline' && row.workload === 'single-stream')?.alarm ?? '', /NCCL_PROTO/);
    assert.match(diff.stdout, /drift alarms:/);

    // Accepting the drift finishes and records the run.
    const accepted = await cli(['run', untuned, '--resume', '--accept-drift'], { store });
    assert.equal(accepted.code, 0, accepted.stderr);
    assert.equal((db.prepare('SELECT status FROM runs WHERE id = 2').get() as { status: string }).status, 'done');
    assert.equal(trialsOf(2), 3);
  });
});
