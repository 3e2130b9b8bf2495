import { z } from 'zod';
import { durationSchema } from '../../config/duration.js';
import { acceptsFormsOf } from '../../config/issues.js';
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
  args: argvSchema.optional().describe('Appended to server.command.'),
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
/** The forms a workload entry accepts (the file reference lists them). */
export const workloadFormsSchema: z.ZodType = workloadSchema;

const workloadEntrySchema = acceptsFormsOf(
  z.unknown().transform((value, ctx): z.output<typeof workloadSchema> => {
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
  }),
  workloadSchema,
);

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
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected a name of letters, digits, ".", "_" or "-"')
    .meta({ description: "The experiment's name: its runs' history (drift, predictions) is kept under it.", examples: ['llama31-8b-eagle3'] }),
  description: z.string().optional().describe('One line on what the experiment asks; shown in reports.'),
  profile: z
    .string()
    .refine((name) => name in BUILTIN_PROFILES, {
      message: `expected a built-in profile: ${Object.keys(BUILTIN_PROFILES).join(', ')}`,
    })
    .meta({
      description: `The server's profile (health paths, log phases, fatal causes, wire format): ${Object.keys(BUILTIN_PROFILES).join(', ')}.`,
      examples: ['vllm'],
    }),
  /** The same keys and rules as a `servelab launch --config` file (launch/server-schema.ts). */
  server: serverSchema.describe('How to start the server; the keys of a `servelab launch --config` file.'),
  executor: executorConfigSchema.describe('Where servers run: this machine, an SSH host or a Slurm cluster.'),
  fingerprint: z
    .strictObject({ envPatterns: z.array(z.string()).default([]), redact: z.array(z.string()).default([]) })
    .default({ envPatterns: [], redact: [] })
    .describe('Extra env-name patterns a fingerprint records, and patterns of values to redact.'),
  client: clientSchema.prefault({}).describe('The load client: prompts, warm-up, timeouts, SLOs, cache mode.'),
  workloads: z
    .array(workloadEntrySchema)
    .min(1, 'expected at least one workload')
    .meta({ description: 'What each trial measures; see the workload kinds below.', examples: [[{ kind: 'single-stream', requests: 16 }]] }),
  trials: z.number().int().min(1).max(1000).default(5).describe('Repetitions of every (variant, workload) pair; ≥ 4 for a rank test to reach p < 0.05.'),
  seed: z.number().int().default(1).describe('Seed of the plan order.'),
  baseline: z.string().optional().describe('The variant the others are compared with; default: the first variant.'),
  metric: z.enum(METRIC_NAMES).default('outputTokensPerSecond').describe('The metric of verdicts and the drift alarm (see metric names).'),
  verdict: z
    .strictObject({
      alpha: z.number().gt(0).lt(1).default(0.05).describe('Significance level of the rank-sum test.'),
      minEffect: z.number().min(0).default(0).describe('Smallest relative effect that counts (0.02 = 2%).'),
    })
    .default({ alpha: 0.05, minEffect: 0 })
    .describe('When a variant differs from the baseline.'),
  drift: z
    .strictObject({
      relativeBand: z.number().min(0).default(0.05).describe('Smallest noise band around the history median (0.05 = ±5%).'),
      sigmas: z.number().min(0).default(3).describe('Width of the prediction interval, in standard deviations.'),
    })
    .default({ relativeBand: 0.05, sigmas: 3 })
    .describe("The drift alarm: a variant's first trials against its history."),
  /** Machine checks before each server start: strict stops the run on a finding, warn logs it, off skips them. */
  preflight: z
    .enum(['strict', 'warn', 'off'])
    .default('warn')
    .describe('Machine checks before each server start: strict stops the run on a finding, warn logs it, off skips them.'),
  /** GPU/host sampling and server /metrics scraping during each trial. */
  telemetry: z
    .strictObject({
      enabled: z.boolean().default(true).describe('Sample at all.'),
      interval: durationSchema.default(1000).describe('Sampling and scraping period.'),
      serverMetrics: z.boolean().default(true).describe("Scrape the server's Prometheus endpoint."),
    })
    .default({ enabled: true, interval: 1000, serverMetrics: true })
    .describe('GPU/host sampling and server /metrics scraping during each trial.'),
  /** A trial counts only when at most this fraction of its requests failed (and its server stayed up). */
  maxFailedFraction: z.number().min(0).max(1).default(0).describe('A trial counts only when at most this fraction of its requests failed.'),
  /** Times an invalid trial is measured again, in place, before the run stops. */
  trialRetries: z.number().int().min(0).max(10).default(2).describe('Times an invalid trial is measured again, in place, before the run stops.'),
  variants: z
    .record(
      z.string().regex(VARIANT_NAME, VARIANT_NAME_RULE),
      variantSchema.nullable().transform((v) => v ?? {}),
    )
    .default({})
    .describe('Named variants: args, env and client settings over the base server and client (see how they combine).'),
  grid: z.array(gridSchema).default([]).describe('Variants from every combination of parameter values.'),
  /** interleaved: every pass visits every server config once per repetition; blocked: few passes, several trials per start; auto: by startup/trial cost. */
  schedule: z
    .enum(['interleaved', 'blocked', 'auto'])
    .default('interleaved')
    .describe(
      'interleaved: every pass visits every server config once per repetition; blocked: few passes, several trials per start; auto: by startup/trial cost.',
    ),
  /** Passes of a blocked schedule (default 2: one forward, one reversed, so slow drift cancels). */
  passes: z.number().int().min(1).optional().describe('Passes of a blocked schedule (default 2: one forward, one reversed).'),
  budget: budgetSchema.optional().describe('Limits a plan must fit; `run` refuses a plan over them unless --force.'),
  maxRestarts: z.number().int().min(0).optional().describe('Server restarts a plan may need at most.'),
  /** fixed: every planned trial; race: drop configs significantly worse than the best after each pass. */
  stopping: z
    .enum(['fixed', 'race'])
    .default('fixed')
    .describe('fixed: every planned trial; race: drop configs significantly worse than the best after each pass.'),
  objective: objectiveSchema.optional().describe('The best config: a metric to maximize or minimize, subject to constraints.'),
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
        .optional()
        .describe('Greedy answers of every variant compared with the baseline, untimed, once per server start (see docs).'),
    })
    .optional()
    .describe('Checks that a faster config did not change the answers.'),
});

export type ExperimentFile = z.output<typeof experimentFileSchema>;
export type VariantSpec = z.output<typeof variantSchema>;
export type GridSpec = z.output<typeof gridSchema>;
export type ClientOverrides = z.output<typeof clientOverridesSchema>;
