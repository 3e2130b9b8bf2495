import assert from 'node:assert/strict';
import Database from 'better-sqlite3';

/** Trial rows and run times of a store, for the lanes tests. */

export interface TrialRow {
  variant: string;
  workload: string;
  block: number;
  lane: number | null;
  started_at: string;
  finished_at: string;
}

export function trialsOf(store: string, runId: number): TrialRow[] {
  const db = new Database(store, { readonly: true });
  try {
    return db.prepare('SELECT variant, workload, block, lane, started_at, finished_at FROM trials WHERE run_id = ? ORDER BY id').all(runId) as TrialRow[];
  } finally {
    db.close();
  }
}

export function runWallMs(store: string, runId: number): number {
  const db = new Database(store, { readonly: true });
  try {
    const row = db.prepare('SELECT started_at, finished_at FROM runs WHERE id = ?').get(runId) as { started_at: string; finished_at: string };
    return Date.parse(row.finished_at) - Date.parse(row.started_at);
  } finally {
    db.close();
  }
}

/** Each block on one lane: every comparison within a block is made within a lane. */
export function lanesOfBlocks(trials: readonly TrialRow[]): Map<number, Set<number | null>> {
  const lanes = new Map<number, Set<number | null>>();
  for (const trial of trials) lanes.set(trial.block, (lanes.get(trial.block) ?? new Set()).add(trial.lane));
  return lanes;
}

// Two identical configs (TWIN changes nothing the simulator reads): a separate server each, so both rotate over lanes.
export const twins = { baseline: {}, twin: { env: { TWIN: '1' } } };

/** Run 1 of `store` (8 planned trials) lost lane 2: its unmeasured trials ran on the other lane, none twice, its own kept. */
export function assertLaneTwoLeft(run: { stderr: string; stdout: string }, store: string): void {
  assert.match(run.stderr, /lane2 left the run: .*; its \d+ unmeasured trials go to the other lanes \(1 left\)/);
  const trials = trialsOf(store, 1);
  assert.equal(trials.length, 8, 'every planned trial measured');
  assert.equal(new Set(trials.map((trial) => `${trial.variant} ${trial.block}`)).size, 8, 'none twice');
  assert.ok(
    trials.some((trial) => trial.lane === 1),
    'the dead lane kept what it measured',
  );
  assert.match(run.stdout, /run 1 done/);
}
