import { z } from 'zod';
import { executorConfigSchema } from '../exec/config.js';
import { parseDurationMs, promptSourceSchema, sloSchema, workloadSchema } from '../load/config.js';
import { BUILTIN_PROFILES } from '../profiles/builtin.js';
import { DEFAULT_READY_TIMEOUT_MS } from '../util/defaults.js';

/** zod schema of an experiment file as written by the user (before grid expansion and defaults of ./load.ts). */

const durationSchema = z.union([z.number().positive().transform((seconds) => seconds * 1000), z.string()]).transform((value, ctx) => {
  if (typeof value === 'number') return value;
  try {
    return parseDurationMs(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

/** A command as a list, or one string split on whitespace (use the list form for arguments containing spaces). */
const argvSchema = z.union([z.array(z.string()), z.string().transform((text) => text.trim().split(/\s+/).filter(Boolean))]);

const envSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String));

const envNameList = z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected an environment variable name'));

const clientOverridesSchema = z.strictObject({
  prompts: promptSourceSchema.optional(),
  warmupRequests: z.number().int().min(0).optional(),
  ignoreEos: z.boolean().optional(),
  requestTimeout: durationSchema.optional(),
  model: z.string().min(1).optional(),
});

const clientSchema = clientOverridesSchema.extend({
  backend: z.enum(['openai-completions', 'openai-chat', 'sglang', 'tgi', 'llamacpp']).optional(),
  slo: sloSchema.optional(),
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

const METRICS = [
  'outputTokensPerSecond',
  'requestsPerSecond',
  'perStreamTokensPerSecond',
  'ttftMedianMs',
  'ttftP99Ms',
  'tpotMedianMs',
  'itlP99Ms',
  'e2eMedianMs',
] as const;

export const experimentFileSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected a name of letters, digits, ".", "_" or "-"'),
  description: z.string().optional(),
  profile: z.string().refine((name) => name in BUILTIN_PROFILES, {
    message: `expected a built-in profile: ${Object.keys(BUILTIN_PROFILES).join(', ')}`,
  }),
  server: z.strictObject({
    command: argvSchema.refine((argv) => argv.length > 0, 'expected a non-empty command'),
    // An `env:` left empty in YAML is null: the same as no entries.
    env: envSchema.nullish().transform((env) => env ?? {}),
    unsetEnv: envNameList.nullish().transform((names) => names ?? []),
    cwd: z.string().optional(),
    /** Fixed port for {port}; default: a free port picked at each launch. */
    port: z.number().int().min(1).max(65535).optional(),
    readyTimeout: durationSchema.default(DEFAULT_READY_TIMEOUT_MS),
    verifyServing: z.boolean().default(true),
    model: z.string().min(1).optional(),
  }),
  executor: executorConfigSchema,
  fingerprint: z
    .strictObject({ envPatterns: z.array(z.string()).default([]), redact: z.array(z.string()).default([]) })
    .default({ envPatterns: [], redact: [] }),
  client: clientSchema.default({}),
  workloads: z.array(workloadEntrySchema).min(1, 'expected at least one workload'),
  trials: z.number().int().min(1).max(1000).default(5),
  seed: z.number().int().default(1),
  baseline: z.string().optional(),
  metric: z.enum(METRICS).default('outputTokensPerSecond'),
  verdict: z
    .strictObject({ alpha: z.number().gt(0).lt(1).default(0.05), minEffect: z.number().min(0).default(0) })
    .default({ alpha: 0.05, minEffect: 0 }),
  drift: z
    .strictObject({ relativeBand: z.number().min(0).default(0.05), sigmas: z.number().min(0).default(3) })
    .default({ relativeBand: 0.05, sigmas: 3 }),
  variants: z.record(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'expected a variant name of letters, digits, ".", "_" or "-"'), variantSchema.nullable().transform((v) => v ?? {})).default({}),
  grid: z.array(gridSchema).default([]),
});

export type ExperimentFile = z.output<typeof experimentFileSchema>;
export type VariantSpec = z.output<typeof variantSchema>;
export type GridSpec = z.output<typeof gridSchema>;
export type ClientOverrides = z.output<typeof clientOverridesSchema>;
