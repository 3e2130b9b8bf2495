/** `servelab export`: one run's stored trials or requests as CSV, JSON Lines, Parquet or vLLM bench-serve results. */
import { laneName } from '../experiment/analysis/lanes.js';
import { storedExperimentOf } from '../experiment/spec/stored.js';
import type { Db } from '../store/db.js';
import { viewedRuns } from '../store/reads.js';
import type { UnreadableRow } from '../store/row-json.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { redactor } from '../util/redact.js';
import { TABLE_FORMATS, type TableFormat, tableCsv, tableJsonl, tableParquet } from './export-formats.js';
import { type ExportLevel, requestTable, trialTable } from './export-table.js';
import { vllmBenchLines, vllmBenchResults } from './export-vllm.js';
import { loadConclusion, loadExportData } from './queries.js';

export const EXPORT_FORMATS = [...TABLE_FORMATS, 'vllm-bench'] as const;
export type ExportFormat = TableFormat | 'vllm-bench';
export const EXPORT_LEVELS: readonly ExportLevel[] = ['trial', 'request'];

export interface ExportResult {
  /** Text for csv, jsonl and vllm-bench; bytes for parquet. */
  content: string | Uint8Array;
  /** Rows (trials or requests) or, for vllm-bench, result objects written. */
  count: number;
  /** What a count is of: "trial rows", "request rows", "vLLM results". */
  unit: string;
  /** Status as views show it, for a note when the run is not finished. */
  status: string;
  unreadable: UnreadableRow[];
}

/**
 * Stored values that cannot be read are left out (named on stderr, listed in `unreadable`); a run with nothing to
 * export is an error rather than an empty file that looks like a result.
 */
export async function exportRun(db: Db, runId: number, format: ExportFormat, level: ExportLevel): Promise<ExportResult> {
  const data = loadExportData(db, runId, { samples: level === 'request' || format === 'vllm-bench' });
  if (!data) throw new UserError(`run ${runId} is not in the store`, 'see run ids with `servelab ls` (and check --store)', ExitCode.usage);
  const [viewed] = viewedRuns(db, [data.run]);
  const base = { status: viewed!.status, unreadable: data.unreadable };
  if (data.trials.length === 0)
    throw new UserError(`run ${runId} has no readable trials to export (status ${viewed!.status})`, `see what it stored with \`servelab show ${runId}\``);
  // Stores written before redaction existed may still hold secrets (in error messages, variant names): no export shows them.
  const redact = redactor();
  if (format === 'vllm-bench') {
    const results = vllmBenchResults(data, { detailed: level === 'request' });
    return { ...base, content: redact.text(vllmBenchLines(results)), count: results.length, unit: 'vLLM results' };
  }
  const experiment = storedExperimentOf(data.run);
  const nameOfLane = (lane: number) => laneName(experiment, lane);
  const table =
    level === 'trial'
      ? trialTable(data.trials, loadConclusion(db, data.run, { trials: data.trials, ranking: false }), nameOfLane)
      : requestTable(data.trials, data.samples, nameOfLane);
  if (table.rows.length === 0) throw new UserError(`run ${runId} has no readable requests stored for its trials`, `export its trials instead: --level trial`);
  table.rows = table.rows.map((row) => row.map((cell) => (typeof cell === 'string' ? redact.text(cell) : cell)));
  const content = format === 'csv' ? tableCsv(table) : format === 'jsonl' ? tableJsonl(table) : await tableParquet(table);
  return { ...base, content, count: table.rows.length, unit: `${level} rows` };
}
