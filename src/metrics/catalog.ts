/**
 * The metric catalogue: every figure a trial keeps about its performance, once. Each entry says what the figure is
 * (unit, which direction is better, how it is computed from a measured level and its power and price), whether an
 * experiment file may judge by it (`metric:`, an objective, a `subjectTo` constraint), and how views show it (group,
 * column header, number format). The trial record's type and its stored schema (store/types.ts, store/columns.ts),
 * the file's metric names (experiment/spec/types.ts), verdict direction, and every table, chart and export column
 * that lists metrics are derived from here. Adding a metric is an entry here plus, when no level field holds it
 * yet, its measurement (ARCHITECTURE.md, "How to add a metric").
 */
import { formatNumber, formatShare } from '../util/format.js';
import type { CategoryResult, LevelResult, Summary } from './types.js';

/** What turns a level's throughput into energy and money: the GPUs' mean power over it, the price of its GPUs. */
export interface MetricInputs {
  /** Mean power of the server host's GPUs over the level, summed over GPUs (telemetry/energy.ts `meanPowerW`). */
  powerW?: number;
  cost?: { gpuHourUsd: number; gpus: number };
}

/** A measured level, or one dataset category of it (the same figures over that category's requests). */
export type MeasuredLevel = LevelResult | CategoryResult;

export type MetricGroup = 'throughput' | 'latency' | 'speculative' | 'cache' | 'efficiency' | 'capacity';

export interface MetricDef {
  /** Unit as views print it ('' for a ratio or count). */
  unit: string;
  better: 'higher' | 'lower';
  /** One line for the experiment-file reference: what the figure is and when a trial has none. */
  description: string;
  group: MetricGroup;
  /** Column header in tables and chart axes. */
  header: string;
  /** Short name inside a combined cell (the speculative "acc/len/verify ms" cell); the header when absent. */
  short?: string;
  format: (value: number) => string;
  /**
   * Every trial has it (NaN where it could not be measured, e.g. a latency with no completed request), or only
   * trials that measured it (speculative stats, prefix-cache hits, power, cost, capacity).
   */
  always: boolean;
  /** An experiment file may name it as `metric:`, an objective or a `subjectTo` constraint. */
  judged: boolean;
  /** Also kept per dataset category (`byCategory`), and shown in the per-category table. */
  perCategory: boolean;
  /** Shown beside the verdict metric (show, report, UI) when some trial has it. */
  side: boolean;
  /** What an experiment file must enable before judging by it. */
  needs?: 'power' | 'cost';
  /**
   * TRIAL_METRICS_VERSION of the first rows that store it; older rows lack it and read as NaN (not measured).
   * Setting it above the current version bumps the version (store/columns.ts).
   */
  since?: number;
  /** The figure of a level (or category); undefined: not measured, the trial record leaves it out. */
  of: (level: MeasuredLevel, inputs: MetricInputs) => number | undefined;
}

/** A quantile of a summary; NaN when it summarised nothing (summarize() keeps zeros there for JSON). */
function quantile(summary: Summary, pick: (summary: Summary) => number): number {
  return summary.count > 0 ? pick(summary) : Number.NaN;
}

/** A figure per output token (power, energy, price): none for a level that produced no tokens. */
function efficiency(level: MeasuredLevel, per: (rate: number) => number | undefined): number | undefined {
  return level.outputTokensPerSecond > 0 ? per(level.outputTokensPerSecond) : undefined;
}

const ratio = formatShare;

export const METRICS = {
  outputTokensPerSecond: {
    unit: 'tok/s',
    better: 'higher',
    description: 'Output tokens per second over the level, all requests together.',
    group: 'throughput',
    header: 'tok/s',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: true,
    side: false,
    of: (level) => level.outputTokensPerSecond,
  },
  requestsPerSecond: {
    unit: 'req/s',
    better: 'higher',
    description: 'Completed requests per second.',
    group: 'throughput',
    header: 'req/s',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: false,
    side: false,
    of: (level) => level.requestsPerSecond,
  },
  perStreamTokensPerSecond: {
    unit: 'tok/s/stream',
    better: 'higher',
    description: "Median single-stream decode speed (a request's output tokens / its end-to-end time).",
    group: 'throughput',
    header: 'tok/s/stream',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: false,
    side: false,
    of: (level) => quantile(level.outputTokensPerSecondPerStream, (summary) => summary.median),
  },
  ttftMedianMs: {
    unit: 'ms',
    better: 'lower',
    description: 'Median time to first token.',
    group: 'latency',
    header: 'TTFT ms p50',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: true,
    side: false,
    of: (level) => quantile(level.ttftMs, (summary) => summary.median),
  },
  ttftP99Ms: {
    unit: 'ms',
    better: 'lower',
    description: '99th percentile of time to first token.',
    group: 'latency',
    header: 'TTFT ms p99',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: false,
    side: false,
    of: (level) => quantile(level.ttftMs, (summary) => summary.p99),
  },
  ttftP90Ms: {
    unit: 'ms',
    better: 'lower',
    description: '90th percentile of time to first token (the tail most SLOs name, steadier than p99 over few requests).',
    group: 'latency',
    header: 'TTFT ms p90',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: false,
    side: false,
    since: 2,
    of: (level) => quantile(level.ttftMs, (summary) => summary.p90),
  },
  tpotMedianMs: {
    unit: 'ms',
    better: 'lower',
    description: 'Median time per output token after the first.',
    group: 'latency',
    header: 'TPOT ms p50',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: true,
    side: false,
    of: (level) => quantile(level.tpotMs, (summary) => summary.median),
  },
  itlP99Ms: {
    unit: 'ms',
    better: 'lower',
    description: '99th percentile of the gaps between token-bearing chunks.',
    group: 'latency',
    header: 'ITL ms p99',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: false,
    side: false,
    of: (level) => quantile(level.itlMs, (summary) => summary.p99),
  },
  e2eMedianMs: {
    unit: 'ms',
    better: 'lower',
    description: 'Median end-to-end request time.',
    group: 'latency',
    header: 'E2E ms p50',
    format: formatNumber,
    always: true,
    judged: true,
    perCategory: true,
    side: false,
    of: (level) => quantile(level.e2eMs, (summary) => summary.median),
  },
  acceptanceRate: {
    unit: '',
    better: 'higher',
    description: 'Speculative decoding: accepted draft tokens / proposed draft tokens.',
    group: 'speculative',
    header: 'acceptance',
    short: 'acc',
    format: ratio,
    always: false,
    judged: false,
    perCategory: true,
    side: false,
    of: (level) => level.spec?.acceptanceRate,
  },
  meanAcceptedLength: {
    unit: 'tok',
    better: 'higher',
    description: 'Speculative decoding: tokens produced per verify step (accepted drafts + the bonus token).',
    group: 'speculative',
    header: 'accepted len',
    short: 'len',
    format: formatNumber,
    always: false,
    judged: false,
    perCategory: true,
    side: false,
    of: (level) => level.spec?.meanAcceptedLength,
  },
  verifyStepMs: {
    unit: 'ms',
    better: 'lower',
    description: 'Speculative decoding: decode time per verify step, draft pass included (absent where the server counts no verify steps).',
    group: 'speculative',
    header: 'verify step ms',
    short: 'verify ms',
    format: formatNumber,
    always: false,
    judged: true,
    perCategory: true,
    side: false,
    of: (level) => level.spec?.verifyStepMs,
  },
  prefixCacheHitRate: {
    unit: '',
    better: 'higher',
    description: 'Prompt tokens the server found in its prefix cache / prompt tokens, where it reported them.',
    group: 'cache',
    header: 'prefix-cache hits',
    format: ratio,
    always: false,
    judged: false,
    perCategory: false,
    side: true,
    of: (level) => level.prefixCache?.hitRate,
  },
  powerW: {
    unit: 'W',
    better: 'lower',
    description: "Mean power of the server host's GPUs over the level (nvidia-smi power.draw, summed over GPUs).",
    group: 'efficiency',
    header: 'GPU W',
    format: formatNumber,
    always: false,
    judged: false,
    perCategory: false,
    side: true,
    needs: 'power',
    of: (level, { powerW }) => efficiency(level, () => powerW),
  },
  joulesPerToken: {
    unit: 'J/tok',
    better: 'lower',
    description: "Energy per output token: the GPUs' mean power / output tok/s (needs telemetry's power readings).",
    group: 'efficiency',
    header: 'J/tok',
    format: formatNumber,
    always: false,
    judged: true,
    perCategory: false,
    side: true,
    needs: 'power',
    of: (level, { powerW }) => efficiency(level, (rate) => (powerW === undefined ? undefined : powerW / rate)),
  },
  tokensPerJoule: {
    unit: 'tok/J',
    better: 'higher',
    description: "Output tokens per joule (needs telemetry's power readings).",
    group: 'efficiency',
    header: 'tok/J',
    format: formatNumber,
    always: false,
    judged: true,
    perCategory: false,
    side: false,
    needs: 'power',
    of: (level, { powerW }) => efficiency(level, (rate) => (powerW === undefined ? undefined : rate / powerW)),
  },
  usdPerMillionTokens: {
    unit: '$/Mtok',
    better: 'lower',
    description: "GPU cost of a million output tokens: the GPUs' hourly price / output tokens per hour (needs `cost:`).",
    group: 'efficiency',
    header: '$/Mtok',
    format: formatNumber,
    always: false,
    judged: true,
    perCategory: false,
    side: true,
    needs: 'cost',
    of: (level, { cost }) => efficiency(level, (rate) => (cost === undefined ? undefined : (cost.gpuHourUsd * cost.gpus * 1e6) / (3600 * rate))),
  },
  sloCapacity: {
    // Which one is the workload's (its name says: capacity:rate=… or capacity:c=…).
    unit: 'req/s or in flight',
    better: 'higher',
    description: "Capacity workloads: the highest rate (req/s) or concurrency meeting the workload's SLOs (0: none did).",
    group: 'capacity',
    header: 'SLO capacity',
    format: formatNumber,
    always: false,
    judged: true,
    perCategory: false,
    side: false,
    of: (level) => ('capacity' in level ? level.capacity?.value : undefined),
  },
} as const satisfies Record<string, MetricDef>;

type Catalogue = typeof METRICS;
/** Every metric of the catalogue, in its order (the order of tables and exports). */
export type CatalogMetric = keyof Catalogue;
type Where<Flag extends 'always' | 'judged' | 'perCategory'> = { [K in CatalogMetric]: Catalogue[K][Flag] extends true ? K : never }[CatalogMetric];
/** The metrics an experiment file may judge by. */
export type JudgedMetric = Where<'judged'>;
export type CategoryMetric = Where<'perCategory'>;

/** Figures as a trial record keeps them: those every trial has, and those only some measured. */
type FiguresOf<K extends CatalogMetric> = { [M in K & Where<'always'>]: number } & { [M in Exclude<K, Where<'always'>>]?: number };
export type MetricFigures = FiguresOf<CatalogMetric>;
export type CategoryFigures = FiguresOf<CategoryMetric>;

export const METRIC_ENTRIES = Object.entries(METRICS) as Array<[CatalogMetric, MetricDef]>;

export function isMetric(name: string): name is CatalogMetric {
  return Object.hasOwn(METRICS, name);
}

export function metricDef(metric: CatalogMetric): MetricDef {
  return METRICS[metric];
}

/** The metrics with a flag set, in catalogue order. */
export function metricsWhere(test: (def: MetricDef) => boolean): CatalogMetric[] {
  return METRIC_ENTRIES.filter(([, def]) => test(def)).map(([name]) => name);
}

export const JUDGED_METRICS = metricsWhere((def) => def.judged) as [JudgedMetric, ...JudgedMetric[]];
export const CATEGORY_METRICS = metricsWhere((def) => def.perCategory) as CategoryMetric[];

/** The figures of a level in catalogue order, one loop; a figure not measured is left out unless every trial has it. */
export function figuresOf(level: MeasuredLevel, inputs: MetricInputs = {}): MetricFigures {
  return collect(METRIC_ENTRIES, level, inputs) as MetricFigures;
}

/** The per-category figures of one category of a level. */
export function categoryFiguresOf(category: CategoryResult): CategoryFigures {
  return collect(
    METRIC_ENTRIES.filter(([, def]) => def.perCategory),
    category,
    {},
  ) as CategoryFigures;
}

function collect(entries: ReadonlyArray<[CatalogMetric, MetricDef]>, level: MeasuredLevel, inputs: MetricInputs): Record<string, number> {
  const figures: Record<string, number> = {};
  for (const [name, def] of entries) {
    const value = def.of(level, inputs);
    if (value !== undefined) figures[name] = value;
    else if (def.always) figures[name] = Number.NaN;
  }
  return figures;
}

/** "71%/2.40/12.3": the speculative figures in one cell, "-" for each one not measured. */
export function speculativeCell(figures: Partial<Record<CatalogMetric, number>>): string {
  return SPECULATIVE.map((name) => {
    const value = figures[name];
    return value === undefined || !Number.isFinite(value) ? '-' : METRICS[name].format(value);
  }).join('/');
}

const SPECULATIVE = metricsWhere((def) => def.group === 'speculative');

/** Header of `speculativeCell`'s column: "spec acc/len/verify ms". */
export const SPECULATIVE_HEADER = `spec ${SPECULATIVE.map((name) => metricDef(name).short ?? metricDef(name).header).join('/')}`;
