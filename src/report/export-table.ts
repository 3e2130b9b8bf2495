/**
 * The rows `servelab export` writes as CSV, JSON Lines or Parquet: one per stored trial (every figure it keeps,
 * flattened) or one per stored request. Pure: stored records in, a typed table out; export-formats.ts writes it.
 * Column names are the stored names (`outputTokensPerSecond`, `byCategory.chat.completed`), so a column means
 * what the same key means in `servelab show --json` and in experiment files.
 */

import type { Conclusion } from '../experiment/analysis/conclusion.js';
import { laneName } from '../experiment/analysis/lanes.js';
import type { SearchSummary } from '../experiment/analysis/search-summary.js';
import { ACROSS_LEVELS } from '../experiment/search/strategy.js';
import { METRIC_ENTRIES } from '../metrics/catalog.js';
import type { RequestSample } from '../metrics/types.js';
import type { TrialRecord } from '../store/types.js';

export type ExportLevel = 'trial' | 'request';

/** integer: counts and ids; number: measured figures (null when not measured); json: a list of numbers (ITL gaps). */
export type ColumnKind = 'string' | 'integer' | 'number' | 'json';

export interface ExportColumn {
  name: string;
  kind: ColumnKind;
}

export type Cell = string | number | null | number[];

export interface ExportTable {
  columns: ExportColumn[];
  /** Every row has every column (null where a trial or request has no value). */
  rows: Cell[][];
}

/** Builds a table whose columns are discovered row by row, in first-seen order. */
class TableBuilder {
  private readonly kinds = new Map<string, ColumnKind>();
  private readonly records: Array<Map<string, Cell>> = [];

  add(cells: ReadonlyArray<[string, ColumnKind, Cell | undefined]>): void {
    const record = new Map<string, Cell>();
    for (const [name, kind, value] of cells) {
      const known = this.kinds.get(name);
      this.kinds.set(name, known === undefined ? kind : mergeKinds(known, kind));
      if (value !== undefined) record.set(name, value);
    }
    this.records.push(record);
  }

  build(): ExportTable {
    const columns = [...this.kinds].map(([name, kind]) => ({ name, kind }));
    const rows = this.records.map((record) =>
      columns.map(({ name, kind }) => {
        const value = record.get(name) ?? null;
        if (kind !== 'string' || value === null || typeof value === 'string') return value;
        return typeof value === 'number' ? String(value) : JSON.stringify(value);
      }),
    );
    return { columns, rows };
  }
}

/** A figure that is whole in one row and not in another is a number; text in any row makes the column text (a grid parameter may be "fp8" in one variant, 4 in another). */
function mergeKinds(a: ColumnKind, b: ColumnKind): ColumnKind {
  if (a === b) return a;
  if ((a === 'integer' || a === 'number') && (b === 'integer' || b === 'number')) return 'number';
  return 'string';
}

/** A lane's name by its stored index (analysis/lanes.ts `laneName` over the run's experiment). */
export type LaneNames = (lane: number) => string;

const defaultLaneName: LaneNames = (lane) => laneName({}, lane);

const COUNT_FIELDS = new Set(['completed', 'failed']);

/** What identifies a trial, first in every row of both levels; every grid parameter of the run in every row. */
function trialCells(trial: TrialRecord, paramNames: readonly string[], nameOfLane: LaneNames): Array<[string, ColumnKind, Cell | undefined]> {
  return [
    ['runId', 'integer', trial.runId],
    ['trialId', 'integer', trial.id],
    ['variant', 'string', trial.variant],
    ['workload', 'string', trial.workload],
    ['concurrency', 'integer', trial.concurrency],
    // Counted from 1, as every view counts them (formatBlock, "trial 3/20"); stored 0-based.
    ['block', 'integer', trial.block + 1],
    ['repetition', 'integer', trial.repetition + 1],
    // The lane that measured it (experiment `lanes:`), by name as every view names it; null without lanes.
    ['lane', 'string', trial.lane === undefined ? undefined : nameOfLane(trial.lane)],
    ...paramNames.map((name): [string, ColumnKind, Cell | undefined] => {
      const value = trial.params[name];
      return [`param.${name}`, typeof value === 'string' ? 'string' : 'number', value];
    }),
  ];
}

function paramNamesOf(trials: readonly TrialRecord[]): string[] {
  return [...new Set(trials.flatMap((trial) => Object.keys(trial.params)))];
}

/**
 * Every stored figure of a trial, nested values flattened with dots (`acceptanceByPosition.0`,
 * `byCategory.chat.ttftMedianMs`); fields a newer servelab added are kept the same way.
 */
function metricCells(value: unknown, prefix: string, out: Array<[string, ColumnKind, Cell]>): void {
  if (value === null || typeof value === 'number') {
    const field = prefix.slice(prefix.lastIndexOf('.') + 1);
    // A figure not measured (NaN in memory) is a null cell, never "NaN" or 0.
    out.push([prefix, COUNT_FIELDS.has(field) ? 'integer' : 'number', typeof value === 'number' && !Number.isFinite(value) ? null : value]);
  } else if (typeof value === 'string' || typeof value === 'boolean') {
    out.push([prefix, 'string', String(value)]);
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => metricCells(item, `${prefix}.${index}`, out));
  } else if (typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) metricCells(item, prefix === '' ? key : `${prefix}.${key}`, out);
  }
}

/**
 * The run's conclusion about a trial's config (analysis/conclusion.ts), as every view states it: its equivalence
 * status and token agreement (with quality.equivalence), its accuracy (with quality.accuracy), whether it is
 * feasible under the objective, with why not, and in a search the levels it is the stated best at and its row of
 * the search's per-point table (searchCells).
 */
function conclusionCells(conclusion: Conclusion, variant: string): Array<[string, ColumnKind, Cell | undefined]> {
  const config = conclusion.configs.find((entry) => entry.variant === variant);
  const isBaseline = variant === (conclusion.equivalence?.baseline ?? conclusion.baseline);
  const cells: Array<[string, ColumnKind, Cell | undefined]> = [];
  if (conclusion.equivalence) {
    cells.push(['conclusion.equivalence', 'string', isBaseline ? 'baseline' : config?.equivalence]);
    cells.push(['conclusion.tokenAgreement', 'number', isBaseline ? 1 : config?.tokenAgreement]);
  }
  if (conclusion.accuracy) cells.push(['conclusion.accuracy', 'number', config?.accuracy]);
  cells.push(['conclusion.feasible', 'integer', config ? Number(config.feasible) : undefined]);
  cells.push(['conclusion.infeasibleBecause', 'string', config?.violations.join('; ') || undefined]);
  // A search's answer: the levels ('*' across them) at which this config is the stated best.
  if (conclusion.search) {
    const levels = conclusion.search.leaders.filter((leader) => leader.best === variant).map((leader) => leader.level);
    cells.push(['conclusion.searchBestAt', 'string', levels.join(' ') || undefined]);
    cells.push(...searchCells(conclusion.search, variant));
  }
  return cells;
}

/**
 * A search point's row of the per-point table (SearchSummary.table), named as `show --json` names it: its status
 * (best, leader, as good, not better, out, racing, unresolved), the block after which a step dropped it, and per
 * race (each level, then '*' across levels) its status there, the leader it was judged against, its estimate vs
 * that leader with the racing bounds (relative, in the objective's direction) and the blocks they rest on.
 */
function searchCells(summary: SearchSummary, variant: string): Array<[string, ColumnKind, Cell | undefined]> {
  const row = summary.table.find((entry) => entry.variant === variant);
  const races = [...Object.keys(summary.table[0]?.trials ?? {}), ACROSS_LEVELS];
  return [
    ['conclusion.searchStatus', 'string', row?.status],
    ['conclusion.searchDecidedAfterBlock', 'integer', row?.decidedAfterBlock],
    ...races.flatMap((level): Array<[string, ColumnKind, Cell | undefined]> => {
      const cell = row?.races.find((entry) => entry.level === level);
      const column = `conclusion.searchRace.${level}`;
      return [
        [`${column}.status`, 'string', cell?.status],
        [`${column}.versus`, 'string', cell?.versus],
        [`${column}.estimate`, 'number', cell?.estimate],
        [`${column}.lower`, 'number', cell?.lower],
        [`${column}.upper`, 'number', cell?.upper],
        [`${column}.blocks`, 'integer', cell?.blocks],
      ];
    }),
  ];
}

/** One row per stored (valid, readable) trial; with the run's conclusion, its config's quality and feasibility too. */
export function trialTable(trials: readonly TrialRecord[], conclusion?: Conclusion, nameOfLane: LaneNames = defaultLaneName): ExportTable {
  const table = new TableBuilder();
  const paramNames = paramNamesOf(trials);
  for (const trial of trials) {
    const metrics: Array<[string, ColumnKind, Cell]> = [];
    // The catalogue's figures first, in its order (rows stored by older versions keep other key orders), then the rest.
    const catalogued = METRIC_ENTRIES.flatMap(([name]) => (trial.metrics[name] === undefined ? [] : [[name, trial.metrics[name]] as const]));
    metricCells({ ...Object.fromEntries(catalogued), ...trial.metrics }, '', metrics);
    table.add([
      ...trialCells(trial, paramNames, nameOfLane),
      ['serverKey', 'string', trial.serverKey],
      ['cache', 'string', trial.cache],
      ['startedAt', 'string', trial.startedAt],
      ['finishedAt', 'string', trial.finishedAt],
      ['fingerprintId', 'integer', trial.fingerprintId],
      ...(conclusion ? conclusionCells(conclusion, trial.variant) : []),
      ...metrics,
    ]);
  }
  return table.build();
}

/**
 * One row per stored request of those trials, as the load client measured it: times in ms from the request's
 * scheduled arrival (or its send, in a closed loop), `itlMs` the gaps between token-bearing chunks.
 */
export function requestTable(
  trials: readonly TrialRecord[],
  samples: ReadonlyMap<number, readonly RequestSample[]>,
  nameOfLane: LaneNames = defaultLaneName,
): ExportTable {
  const table = new TableBuilder();
  const paramNames = paramNamesOf(trials);
  for (const trial of trials) {
    for (const sample of samples.get(trial.id) ?? []) {
      table.add([
        ...trialCells(trial, paramNames, nameOfLane),
        ['index', 'integer', sample.index],
        ['sentAtMs', 'number', sample.sentAtMs],
        ['inputTokens', 'integer', sample.inputTokens],
        ['outputTokens', 'integer', sample.outputTokens],
        ['ttftMs', 'number', sample.ttftMs],
        ['tpotMs', 'number', sample.tpotMs],
        ['e2eMs', 'number', sample.e2eMs],
        ['itlMs', 'json', sample.itlMs],
        ['cachedTokens', 'integer', sample.cachedTokens],
        ['turn', 'integer', sample.turn],
        ['category', 'string', sample.category],
        ['resent', 'integer', sample.resent ? 1 : 0],
        ['errorKind', 'string', sample.error?.kind],
        ['errorMessage', 'string', sample.error?.message],
      ]);
    }
  }
  return table.build();
}
