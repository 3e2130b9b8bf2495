/**
 * Decoders of the stored JSON columns other than a run's (those are in ./run-json.ts), and of the scalar columns
 * that hold measurements (a request's counts and times, a trial's numbers): each checks the fields its readers rely
 * on and keeps the rest as stored. Trial metrics are stamped with TRIAL_METRICS_VERSION on write;
 * rows without a stamp are version 0, the same shape. Bump a version on an incompatible shape change and teach the
 * decoder to read the older one.
 */
import { z } from 'zod';
import type { Fingerprint } from '../fingerprint/types.js';
import { METRIC_ENTRIES, type MetricDef } from '../metrics/catalog.js';
import type { RequestOutput } from '../metrics/types.js';
import type { ServerMetrics, TelemetrySeries, TelemetrySummary } from '../telemetry/types.js';
import { decodeColumn, decodeScalars, UnreadableRowError } from './row-json.js';
import type { PhaseTiming, TrialMetrics } from './types.js';

/** Rows stamped before a metric's `since` lack it (metrics/catalog.ts); a new metric with a `since` bumps this. */
export const TRIAL_METRICS_VERSION = Math.max(1, ...METRIC_ENTRIES.map(([, def]) => def.since ?? 0));
/** Stamp of equivalence_outputs.outputs_json ({ schemaVersion, outputs }). */
export const EQUIVALENCE_OUTPUTS_VERSION = 1;

/** A measured figure; null is how JSON keeps NaN, a figure the trial could not measure (no request completed). */
const figure = z.number().nullable();

/** The catalogue's figures as stored: those every trial has are required, unless older rows predate them. */
function figureShape(entries: ReadonlyArray<[string, MetricDef]>): Record<string, z.ZodOptional<typeof figure> | typeof figure> {
  return Object.fromEntries(entries.map(([name, def]) => [name, def.always && def.since === undefined ? figure : figure.optional()]));
}

const categorySchema = z
  .object({ completed: z.number(), failed: z.number(), ...figureShape(METRIC_ENTRIES.filter(([, def]) => def.perCategory)) })
  .passthrough();

const trialMetricsSchema = z
  .object({
    schemaVersion: z.number().int().min(0).optional(),
    ...figureShape(METRIC_ENTRIES),
    completed: z.number().int().min(0),
    failed: z.number().int().min(0),
    specNumSteps: figure.optional(),
    specNumDraftTokens: figure.optional(),
    acceptanceByPosition: z.array(figure).optional(),
    prefixCacheTargetHitRate: figure.optional(),
    ttftMedianByTurnMs: z.array(figure).optional(),
    sessionsEndedByFailure: z.number().int().min(0).optional(),
    byCategory: z.record(z.string(), categorySchema).optional(),
    outputLength: z
      .object({ requestedMean: figure, generatedMean: figure, shortRequests: z.number().int().min(0), overLengthRequests: z.number().int().min(0).optional() })
      .optional(),
    tokenCounts: z
      .object({
        method: z.string(),
        checked: z.number().int().min(0),
        disagreeing: z.number().int().min(0),
        severalPerEvent: z.object({ requests: z.number().int().min(0), tokens: z.number().min(0), events: z.number().min(0) }).optional(),
      })
      .optional(),
    resends: z.number().int().min(0).optional(),
    afterStart: z.number().int().min(1).optional(),
    rate: z.object({ offeredPerSecond: figure, servedPerSecond: figure, queuedByCap: z.number().int().min(0), maxLagMs: figure }).optional(),
  })
  .passthrough();

const paramsSchema = z.record(z.string(), z.union([z.string(), z.number()]));

const fingerprintSchema = z
  .object({
    servelabVersion: z.string(),
    executor: z.string(),
    host: z.object({ hostname: z.string() }).passthrough(),
    gpus: z.array(z.object({ index: z.number(), name: z.string() }).passthrough()),
  })
  .passthrough();

const itlSchema = z.array(z.number());

const phasesSchema = z.array(z.object({ phase: z.string(), startMs: z.number(), durationMs: z.number() }).passthrough());

const telemetrySummarySchema = z
  .object({ gpus: z.array(z.object({ index: z.number() }).passthrough()), processes: z.array(z.unknown()), governors: z.array(z.string()) })
  .passthrough();
const telemetrySeriesSchema = z
  .object({
    gpu: z.array(z.object({ at: z.number() }).passthrough()),
    host: z.array(z.unknown()),
    processes: z.array(z.unknown()),
    governors: z.array(z.string()),
  })
  .passthrough();
const serverMetricsSchema = z
  .object({ unavailable: z.string().optional(), series: z.array(z.object({ name: z.string(), points: z.array(z.tuple([z.number(), figure])) })) })
  .passthrough();

const changesSchema = z.array(z.object({ key: z.string(), before: z.string().optional(), after: z.string().optional() }).passthrough());
const machineSchema = z.array(z.string());

export function encodeTrialMetrics(metrics: TrialMetrics): string {
  return JSON.stringify({ schemaVersion: TRIAL_METRICS_VERSION, ...metrics });
}

export function decodeTrialMetrics(rowId: number, text: string): TrialMetrics {
  const ref = { table: 'trials', rowId, column: 'metrics_json' };
  const { schemaVersion = 0, ...metrics } = nullsAsNaN(decodeColumn(ref, trialMetricsSchema, text, { version: TRIAL_METRICS_VERSION })) as {
    schemaVersion?: number;
    byCategory?: Record<string, Record<string, unknown>>;
  } & Record<string, unknown>;
  const missing = [
    ...absentFigures(metrics, METRIC_ENTRIES, schemaVersion),
    ...Object.entries(metrics.byCategory ?? {}).flatMap(([category, figures]) =>
      absentFigures(figures, CATEGORY_ENTRIES, schemaVersion).map((name) => `byCategory.${category}.${name}`),
    ),
  ];
  if (missing.length > 0) throw new UnreadableRowError({ ...ref, cause: `${missing[0]}: absent in a version ${schemaVersion} row` });
  return metrics as unknown as TrialMetrics;
}

const CATEGORY_ENTRIES = METRIC_ENTRIES.filter(([, def]) => def.perCategory);

/** Every figure in memory as its type says: a stored null is a NaN JSON could not keep (not measured), never 0. */
function nullsAsNaN(value: unknown): unknown {
  if (value === null) return Number.NaN;
  if (Array.isArray(value)) return value.map(nullsAsNaN);
  if (typeof value === 'object') return Object.fromEntries(Object.entries(value as object).map(([key, item]) => [key, nullsAsNaN(item)]));
  return value;
}

/**
 * A catalogue figure every trial has, absent from a row stamped before the figure's `since`, is NaN (that servelab
 * did not measure it); the names of those a row of its version should have and lacks.
 */
function absentFigures(figures: Record<string, unknown>, entries: ReadonlyArray<[string, MetricDef]>, version: number): string[] {
  return entries.flatMap(([name, def]) => {
    if (figures[name] !== undefined || !def.always) return [];
    if (version >= (def.since ?? 0)) return [name];
    figures[name] = Number.NaN;
    return [];
  });
}

export function decodeTrialParams(rowId: number, text: string): Record<string, string | number> {
  return decodeColumn({ table: 'trials', rowId, column: 'params_json' }, paramsSchema, text);
}

export function decodeFingerprint(rowId: number, text: string): Fingerprint {
  return decodeColumn({ table: 'fingerprints', rowId, column: 'json' }, fingerprintSchema, text) as unknown as Fingerprint;
}

/** A count or a time as SQLite returned it: a finite number (text, a blob or ±Infinity in a numeric column is not). */
const count = z.number().int().min(0);
const time = z.number().finite();
const latency = z.number().finite().min(0).nullable();

const sampleScalarsSchema = z.object({
  idx: count,
  sent_at_ms: time,
  input_tokens: count,
  output_tokens: count,
  ttft_ms: latency,
  tpot_ms: latency,
  e2e_ms: latency,
  error_kind: z.string().nullable(),
  error_message: z.string().nullable(),
});

/** The scalar columns of a samples row (selected with `rowid AS id`); its itl_json is decodeItl's. */
export function decodeSampleScalars<Row extends { id: number }>(row: Row): Row & z.infer<typeof sampleScalarsSchema> {
  return decodeScalars({ table: 'samples', rowId: row.id }, sampleScalarsSchema.passthrough(), row) as Row & z.infer<typeof sampleScalarsSchema>;
}

/** A request's latencies alone (views that read only them). */
export function decodeSampleLatencies<Row extends { id: number }>(row: Row): Row & { ttft_ms: number | null; e2e_ms: number | null } {
  return decodeScalars({ table: 'samples', rowId: row.id }, sampleScalarsSchema.pick({ ttft_ms: true, e2e_ms: true }).passthrough(), row) as Row & {
    ttft_ms: number | null;
    e2e_ms: number | null;
  };
}

const trialScalarsSchema = z.object({ concurrency: count.nullable(), block: count, repetition: count, fingerprint_id: count, lane: count.nullish() });

/** The scalar columns of a trials row; its JSON columns are decodeTrialMetrics' and decodeTrialParams'. */
export function decodeTrialScalars<Row extends { id: number }>(row: Row): Row {
  return decodeScalars({ table: 'trials', rowId: row.id }, trialScalarsSchema.passthrough(), row) as Row;
}

export function decodeItl(rowId: number, text: string): number[] {
  return decodeColumn({ table: 'samples', rowId, column: 'itl_json' }, itlSchema, text);
}

export function decodePhases(rowId: number, text: string): PhaseTiming[] {
  return decodeColumn({ table: 'startups', rowId, column: 'phases_json' }, phasesSchema, text);
}

/** trial_telemetry is keyed by its trial: the row id named is the trial's. */
export function decodeTelemetrySummary(trialId: number, text: string): TelemetrySummary {
  return decodeColumn({ table: 'trial_telemetry', rowId: trialId, column: 'summary_json' }, telemetrySummarySchema, text) as unknown as TelemetrySummary;
}

export function decodeTelemetrySeries(trialId: number, text: string): TelemetrySeries {
  return decodeColumn({ table: 'trial_telemetry', rowId: trialId, column: 'series_json' }, telemetrySeriesSchema, text) as unknown as TelemetrySeries;
}

export function decodeServerMetrics(trialId: number, text: string): ServerMetrics {
  return decodeColumn({ table: 'trial_telemetry', rowId: trialId, column: 'server_metrics_json' }, serverMetricsSchema, text) as unknown as ServerMetrics;
}

export function decodeAlarmChanges(rowId: number, text: string): z.infer<typeof changesSchema> {
  return decodeColumn({ table: 'drift_alarms', rowId, column: 'changes_json' }, changesSchema, text);
}

export function decodeAlarmMachine(rowId: number, text: string): string[] {
  return decodeColumn({ table: 'drift_alarms', rowId, column: 'machine_json' }, machineSchema, text);
}

const equivalenceOutputsSchema = z
  .object({
    schemaVersion: z.number().int().min(0).optional(),
    outputs: z.array(
      z
        .object({
          prompt: z.number().int(),
          level: z.string(),
          text: z.string(),
          tokenIds: z.array(z.number()).optional(),
          finishReason: z.string().optional(),
          error: z.string().optional(),
        })
        .passthrough(),
    ),
  })
  .passthrough();

export function encodeEquivalenceOutputs(outputs: readonly RequestOutput[]): string {
  return JSON.stringify({ schemaVersion: EQUIVALENCE_OUTPUTS_VERSION, outputs });
}

export function decodeEquivalenceOutputs(rowId: number, text: string): RequestOutput[] {
  return decodeColumn({ table: 'equivalence_outputs', rowId, column: 'outputs_json' }, equivalenceOutputsSchema, text, {
    version: EQUIVALENCE_OUTPUTS_VERSION,
  }).outputs;
}
