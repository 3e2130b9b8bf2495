import { z } from 'zod';
import { durationSchema } from '../../config/duration.js';
import { executorConfigSchema } from '../../exec/config.js';
import { argvSchema, envNameList, envSchema, serverSchema } from '../../launch/server-schema.js';
import { promptSourceSchema, sloSchema, workloadSchema } from '../../load/config.js';
import { BUILTIN_PROFILES } from '../../profiles/builtin.js';
import { BACKEND_KINDS } from '../../profiles/types.js';
import { METRIC_NAMES } from './types.js';

/** zod schema of an experiment file as written by the user (before grid expansion and defaults of ./load.ts). */

/** Variant names end up in store rows, file names, HTML and Markdown: letters, digits, ".", "_" or "-" only. */
export const VARIANT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export const VARIANT_NAME_RULE = 'expected a variant name of letters, digits, ".", "_" or "-"';

const clientOverridesSchema = z.strictObject({
  prompts: promptSourceSchema.optional(),
  warmupRequests: z.number().int().min(0).max(100_000).optional(),
  ignoreEos: z.boolean().optional(),
  requestTimeout: durationSchema.optional(),
  model: z.string().min(1).optional(),
  /** The model's tokenizer.json or model directory (exact prompt lengths, chat template, counts without usage). */
  tokenizer: z.string().min(1).optional(),
  /** Load-generation threads: a count or 'auto' (one per core). */
  workers: z.union([z.literal('auto'), z.number().int().positive()]).optional(),
  /** With ignoreEos: a trial whose requests stop short of their length is invalid (default true). */
  requireFullOutput: z.boolean().optional(),
  /** The output-token count to trust when usage, stream events and tokenizer disagree; unset: a disagreement is invalid. */
  tokenCounts: z.enum(['usage', 'stream', 'tokenizer']).optional(),
});

const clientSchema = clientOverridesSchema.extend({
  backend: z.enum(BACKEND_KINDS).optional(),
  slo: sloSchema.optional(),
  /**
   * cold (default): each trial's prompts open with a per-trial salt, so no prefix-cache hit crosses trials; warm: the
   * same prompts in every trial (a trial's cache state then depends on its place in the plan). One value for all
   * variants: a comparison between a cold and a warm variant would measure the cache. reset: cold through the
   * profile's cache-reset API instead (vLLM /reset_prefix_cache, SGLang /flush_cache, llama.cpp cache_prompt: false).
   */
  cache: z.enum(['cold', 'warm', 'reset']).default('cold'),
});

const variantSchema = z.strictObject({
  /** Appended to server.command. */
  args: argvSchema.optional(),
  env: envSchema.optional(),
  unsetEnv: envNameList.optional(),
  client: clientOverridesSchema.optional(),
});

const gridSchema = variantSchema.extend({
  /** Variant name template, e.g. "eagle3-s{steps}-d{draft}"; every parameter must appear in it. */
  name: z.string().min(1),
  params: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a parameter name'), z.array(z.union([z.string(), z.number()])).min(1))
    .refine((params) => Object.keys(params).length > 0, 'expected at least one parameter'),
});

const WORKLOAD_KINDS = ['single-stream', 'concurrency', 'rate', 'sweep'] as const;

/**
 * The load module's workload schema, with the error of the branch the user meant (by `kind`) instead of zod's
 * generic "Invalid input" for a failed union.
 */
const workloadEntrySchema = z.unknown().transform((value, ctx): z.output<typeof workloadSchema> => {
  const result = workloadSchema.safeParse(value);
  if (result.success) return result.data;
  const kind = (value as { kind?: unknown } | null)?.kind;
  if (!WORKLOAD_KINDS.includes(kind as (typeof WORKLOAD_KINDS)[number])) {
    ctx.addIssue({ code: 'custom', path: ['kind'], message: `expected kind: ${WORKLOAD_KINDS.join(', ')}` });
    return z.NEVER;
  }
  const union = result.error.issues.find((issue) => issue.code === 'invalid_union');
  const branches = union && 'errors' in union ? (union.errors as z.core.$ZodIssue[][]) : [result.error.issues];
  // The branch that did not reject `kind` is the one this entry is written for.
  const meant = branches.find((issues) => !issues.some((issue) => issue.path[0] === 'kind')) ?? branches[0]!;
  // Forwarded whole (code, keys, bounds), so the config loader can word them and place unknown keys.
  for (const issue of meant) ctx.addIssue(issue as z.core.$ZodRawIssue);
  return z.NEVER;
});

/** A constraint on a metric, e.g. "< 500" or ">= 20". */
const constraintSchema = z.string().regex(/^\s*(<=|>=|<|>)\s*-?\d+(\.\d+)?\s*$/, 'expected a comparison like "< 500" or ">= 20"');

const objectiveSchema = z
  .strictObject({
    maximize: z.enum(METRIC_NAMES).optional(),
    minimize: z.enum(METRIC_NAMES).optional(),
    /** outputMatch: token agreement with the baseline's greedy answers (quality.equivalence, on by it). */
    subjectTo: z.partialRecord(z.enum([...METRIC_NAMES, 'outputMatch']), constraintSchema).default({}),
    /** Workload the objective is judged on (default: the first). */
    workload: z.string().optional(),
  })
  .refine((objective) => (objective.maximize === undefined) !== (objective.minimize === undefined), 'expected exactly one of maximize or minimize');

const budgetSchema = z
  .strictObject({
    wallTime: durationSchema.optional(),
    gpuHours: z.number().positive().optional(),
    gpusPerServer: z.number().int().min(1).default(1),
  })
  .refine((budget) => budget.wallTime !== undefined || budget.gpuHours !== undefined, 'expected wallTime and/or gpuHours');

export const experimentFileSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected a name of letters, digits, ".", "_" or "-"'),
  description: z.string().optional(),
  profile: z.string().refine((name) => name in BUILTIN_PROFILES, {
    message: `expected a built-in profile: ${Object.keys(BUILTIN_PROFILES).join(', ')}`,
  }),
  /** The same keys and rules as a `servelab launch --config` file (launch/server-schema.ts). */
  server: serverSchema,
  executor: executorConfigSchema,
  fingerprint: z
    .strictObject({ envPatterns: z.array(z.string()).default([]), redact: z.array(z.string()).default([]) })
    .default({ envPatterns: [], redact: [] }),
  client: clientSchema.prefault({}),
  workloads: z.array(workloadEntrySchema).min(1, 'expected at least one workload'),
  trials: z.number().int().min(1).max(1000).default(5),
  seed: z.number().int().default(1),
  baseline: z.string().optional(),
  metric: z.enum(METRIC_NAMES).default('outputTokensPerSecond'),
  verdict: z.strictObject({ alpha: z.number().gt(0).lt(1).default(0.05), minEffect: z.number().min(0).default(0) }).default({ alpha: 0.05, minEffect: 0 }),
  drift: z.strictObject({ relativeBand: z.number().min(0).default(0.05), sigmas: z.number().min(0).default(3) }).default({ relativeBand: 0.05, sigmas: 3 }),
  /** Machine checks before each server start: strict stops the run on a finding, warn logs it, off skips them. */
  preflight: z.enum(['strict', 'warn', 'off']).default('warn'),
  /** GPU/host sampling and server /metrics scraping during each trial. */
  telemetry: z
    .strictObject({ enabled: z.boolean().default(true), interval: durationSchema.default(1000), serverMetrics: z.boolean().default(true) })
    .default({ enabled: true, interval: 1000, serverMetrics: true }),
  /** A trial counts only when at most this fraction of its requests failed (and its server stayed up). */
  maxFailedFraction: z.number().min(0).max(1).default(0),
  /** Times an invalid trial is measured again, in place, before the run stops. */
  trialRetries: z.number().int().min(0).max(10).default(2),
  variants: z
    .record(
      z.string().regex(VARIANT_NAME, VARIANT_NAME_RULE),
      variantSchema.nullable().transform((v) => v ?? {}),
    )
    .default({}),
  grid: z.array(gridSchema).default([]),
  /** interleaved: every pass visits every server config once per repetition; blocked: few passes, several trials per start; auto: by startup/trial cost. */
  schedule: z.enum(['interleaved', 'blocked', 'auto']).default('interleaved'),
  /** Passes of a blocked schedule (default 2: one forward, one reversed, so slow drift cancels). */
  passes: z.number().int().min(1).optional(),
  budget: budgetSchema.optional(),
  maxRestarts: z.number().int().min(0).optional(),
  /** fixed: every planned trial; race: drop configs significantly worse than the best after each pass. */
  stopping: z.enum(['fixed', 'race']).default('fixed'),
  objective: objectiveSchema.optional(),
  quality: z
    .strictObject({
      /**
       * Greedy answers of every variant compared with the baseline's: the same prompts (from the baseline's client
       * prompt source) sent once per server start, untimed, before its trials (src/experiment/run/equivalence.ts).
       */
      equivalence: z
        .strictObject({
          prompts: z.number().int().min(1).max(1000).default(16),
          outputTokens: z.number().int().min(1).max(32768).default(128),
        })
        .optional(),
    })
    .optional(),
});

export type ExperimentFile = z.output<typeof experimentFileSchema>;
export type VariantSpec = z.output<typeof variantSchema>;
export type GridSpec = z.output<typeof gridSchema>;
export type ClientOverrides = z.output<typeof clientOverridesSchema>;
