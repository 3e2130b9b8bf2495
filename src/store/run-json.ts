/**
 * The one decoder of a run's stored JSON (runs.config_json, plan_json, verdict_json). Every reader goes through it,
 * so a row that does not have the shape the code expects is a one-line error naming the run, never a silently
 * wrong number from a field that is not there. Rows are stamped with RUN_JSON_VERSION; rows written before the
 * stamp existed (no `schemaVersion`) are version 0 and read the same way: later fields are optional in the types.
 */
import { z } from 'zod';
import { decodeColumn } from './row-json.js';

/** Bump when a stored shape changes incompatibly, and teach `decode` to read the older version. */
export const RUN_JSON_VERSION = 1;

const version = z.number().int().min(0).max(RUN_JSON_VERSION).optional();

/** The fields every reader of a stored experiment relies on; the rest is kept as stored. */
const storedExperimentSchema = z
  .object({
    schemaVersion: version,
    name: z.string(),
    filePath: z.string(),
    baseline: z.string(),
    metric: z.string(),
    trials: z.number(),
    variants: z.array(z.object({ name: z.string(), serverKey: z.string() }).passthrough()),
    workloads: z.array(z.object({ label: z.string() }).passthrough()),
  })
  .passthrough();

const plannedTrialSchema = z.object({
  index: z.number().int(),
  block: z.number().int(),
  repetition: z.number().int(),
  variant: z.string(),
  serverKey: z.string(),
  workload: z.string(),
});

const storedPlanSchema = z.object({
  schemaVersion: version,
  schedule: z.enum(['interleaved', 'blocked']).optional(),
  seed: z.number(),
  blocks: z.number().int(),
  restarts: z.number().int(),
  trials: z.array(plannedTrialSchema),
});

const storedVerdictsSchema = z.array(
  z
    .object({
      variant: z.string(),
      workload: z.string(),
      metric: z.string(),
      baselineMedian: z.number().nullable(),
      candidateMedian: z.number().nullable(),
    })
    .passthrough(),
);

export type StoredExperiment = Omit<z.infer<typeof storedExperimentSchema>, 'schemaVersion'>;
export type StoredPlan = Omit<z.infer<typeof storedPlanSchema>, 'schemaVersion'>;
export type StoredVerdicts = z.infer<typeof storedVerdictsSchema>;

/** The stored text of a run's experiment or plan: the object stamped with the current version. */
export function encodeVersioned(value: object): string {
  return JSON.stringify({ schemaVersion: RUN_JSON_VERSION, ...value });
}

export function decodeExperiment(runId: number, text: string): StoredExperiment {
  return withoutVersion(decode(runId, 'config_json', 'experiment', storedExperimentSchema, text));
}

export function decodePlan(runId: number, text: string): StoredPlan {
  return withoutVersion(decode(runId, 'plan_json', 'plan', storedPlanSchema, text));
}

export function decodeVerdicts(runId: number, text: string): StoredVerdicts {
  return decode(runId, 'verdict_json', 'verdicts', storedVerdictsSchema, text);
}

/**
 * The value as stored, not zod's copy: that one reorders keys, and a resume compares the stored experiment with
 * the file's. The schemas have no transforms, so nothing else differs.
 */
function decode<T>(runId: number, column: string, what: string, schema: z.ZodType<T>, text: string): T {
  return decodeColumn({ table: 'runs', rowId: runId, column }, schema, text, { version: RUN_JSON_VERSION, what: `run ${runId}: its stored ${what}` });
}

function withoutVersion<T extends { schemaVersion?: number | undefined }>(value: T): Omit<T, 'schemaVersion'> {
  const { schemaVersion: _version, ...rest } = value;
  return rest;
}
