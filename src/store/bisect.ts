import { z } from 'zod';
import type { Db } from './db.js';
import { listTrials } from './queries.js';
import { decodeColumn } from './row-json.js';
import type { TrialRecord } from './types.js';

/**
 * Stored bisects (`servelab bisect`): what one compares and its rounds, each round a run of generated variants. The
 * answer is not stored: it is computed from the rounds' trials (experiment/analysis/bisect.ts), so every view and a
 * resume read the same measurements.
 */

const DifferenceSchema = z.object({
  name: z.string(),
  kind: z.enum(['env', 'flag']),
  reference: z.string().optional(),
  current: z.string().optional(),
});

const SetupSchema = z.object({
  variant: z.string(),
  workload: z.string(),
  metric: z.string(),
  /** Smallest change (relative, 0.05 = 5%) a setting must cause to be named. */
  tolerance: z.number(),
  /** Trials of each configuration in each round. */
  trials: z.number().int().positive(),
  maxTrials: z.number().int().positive().optional(),
  /** The rank tests' significance level and bootstrap seed, and the GPUs a server holds (GPU-hours). */
  alpha: z.number(),
  seed: z.number(),
  gpusPerServer: z.number(),
  /** Passes of a blocked round (server starts per configuration): the file's, 1 by default. */
  passes: z.number().int().positive().optional(),
  differences: z.array(DifferenceSchema),
  fixed: z.array(z.object({ key: z.string(), before: z.string().optional(), after: z.string().optional(), why: z.string() })),
});
export type BisectSetupRecord = z.infer<typeof SetupSchema>;

/**
 * A round's configurations (the differences each restores). Bisects of the first version stored only the subsets
 * tested beside the current and the reference configuration (why half / without): read as configurations with those two.
 */
const TestsSchema = z.array(z.object({ members: z.array(z.string()), why: z.enum(['screen', 'pair', 'half', 'without']) }));
export type StoredConfig = { members: string[]; why: 'screen' | 'pair' };

export type BisectStatus = 'running' | 'done' | 'stopped';

export interface BisectRecord {
  id: number;
  createdAt: string;
  currentRunId: number;
  referenceRunId: number;
  setup: BisectSetupRecord;
  status: BisectStatus;
  message?: string;
}

export interface BisectRoundRecord {
  round: number;
  runId: number;
  configs: StoredConfig[];
}

interface BisectRow {
  id: number;
  created_at: string;
  current_run_id: number;
  reference_run_id: number;
  setup_json: string;
  status: BisectStatus;
  message: string | null;
}

function bisectFromRow(row: BisectRow): BisectRecord {
  return {
    id: row.id,
    createdAt: row.created_at,
    currentRunId: row.current_run_id,
    referenceRunId: row.reference_run_id,
    setup: decodeColumn({ table: 'bisects', rowId: row.id, column: 'setup_json' }, SetupSchema, row.setup_json, { what: `bisect ${row.id}` }),
    status: row.status,
    ...(row.message !== null && { message: row.message }),
  };
}

export function insertBisect(db: Db, bisect: { currentRunId: number; referenceRunId: number; setup: BisectSetupRecord }): number {
  const result = db
    .prepare("INSERT INTO bisects (created_at, current_run_id, reference_run_id, setup_json, status) VALUES (?, ?, ?, ?, 'running')")
    .run(new Date().toISOString(), bisect.currentRunId, bisect.referenceRunId, JSON.stringify(bisect.setup));
  return Number(result.lastInsertRowid);
}

export function setBisectStatus(db: Db, bisectId: number, status: BisectStatus, message?: string): void {
  db.prepare('UPDATE bisects SET status = ?, message = ? WHERE id = ?').run(status, message ?? null, bisectId);
}

export function getBisect(db: Db, bisectId: number): BisectRecord | undefined {
  const row = db.prepare('SELECT * FROM bisects WHERE id = ?').get(bisectId) as BisectRow | undefined;
  return row && bisectFromRow(row);
}

/** The newest unfinished bisect of these two runs: what a repeated `servelab bisect` continues. */
export function unfinishedBisect(db: Db, currentRunId: number, referenceRunId: number): BisectRecord | undefined {
  const row = db
    .prepare("SELECT * FROM bisects WHERE current_run_id = ? AND reference_run_id = ? AND status != 'done' ORDER BY id DESC LIMIT 1")
    .get(currentRunId, referenceRunId) as BisectRow | undefined;
  return row && bisectFromRow(row);
}

/** The bisect a run is a round of, if any (show, report and UI render its answer beside the run). */
export function bisectOfRun(db: Db, runId: number): BisectRecord | undefined {
  // A store opened read-only may predate bisects.
  if (!db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'bisects'").get()) return undefined;
  const row = db
    .prepare(
      'SELECT b.* FROM bisects b JOIN bisect_rounds r ON r.bisect_id = b.id WHERE r.run_id = ? UNION SELECT * FROM bisects WHERE current_run_id = ? ORDER BY id DESC LIMIT 1',
    )
    .get(runId, runId) as BisectRow | undefined;
  return row && bisectFromRow(row);
}

export function insertBisectRound(db: Db, bisectId: number, round: BisectRoundRecord): void {
  db.prepare('INSERT INTO bisect_rounds (bisect_id, round, run_id, tests_json) VALUES (?, ?, ?, ?)').run(
    bisectId,
    round.round,
    round.runId,
    JSON.stringify(round.configs),
  );
}

export function listBisectRounds(db: Db, bisectId: number, all: readonly string[]): BisectRoundRecord[] {
  const rows = db.prepare('SELECT rowid, round, run_id, tests_json FROM bisect_rounds WHERE bisect_id = ? ORDER BY round').all(bisectId) as Array<{
    rowid: number;
    round: number;
    run_id: number;
    tests_json: string;
  }>;
  return rows.map((row) => {
    const stored = decodeColumn({ table: 'bisect_rounds', rowId: row.rowid, column: 'tests_json' }, TestsSchema, row.tests_json);
    const firstVersion = stored.some((entry) => entry.why === 'half' || entry.why === 'without');
    const configs: StoredConfig[] = stored.map((entry) => ({ members: entry.members, why: entry.why === 'pair' ? 'pair' : 'screen' }));
    if (firstVersion) configs.unshift({ members: [], why: 'screen' }, { members: [...all].sort(), why: 'screen' });
    return { round: row.round, runId: row.run_id, configs };
  });
}

/** Each round with its run's status and times and the trials it measured: what a bisect's views are computed from. */
export function bisectRoundRows(
  db: Db,
  bisect: Pick<BisectRecord, 'id' | 'setup'>,
): Array<BisectRoundRecord & { status: string; blocked: boolean; startedAt: string; finishedAt?: string; trials: TrialRecord[] }> {
  const all = bisect.setup.differences.map((difference) => difference.name);
  return listBisectRounds(db, bisect.id, all).map((round) => {
    const run = db
      .prepare("SELECT status, started_at, finished_at, json_extract(plan_json, '$.schedule') AS schedule FROM runs WHERE id = ?")
      .get(round.runId) as { status: string; started_at: string; finished_at: string | null; schedule: string | null } | undefined;
    return {
      ...round,
      status: run?.status ?? 'missing',
      blocked: run?.schedule === 'blocked',
      startedAt: run?.started_at ?? new Date(0).toISOString(),
      ...(run?.finished_at && { finishedAt: run.finished_at }),
      trials: listTrials(db, round.runId),
    };
  });
}
