import { z } from 'zod';
import { acceptsFormsOf } from '../config/issues.js';
import { DEFAULT_MAX_IN_FLIGHT } from '../util/defaults.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { DATASET_FORMATS } from './datasets/types.js';
import type { LengthDistribution, PromptSource, Slo, Workload } from './types.js';

/**
 * zod schemas for the workload / prompts / SLO sections of a benchmark, shared by `servelab bench` and the
 * experiment file's `workloads:` entries. They parse straight into the contract types of ./types.ts.
 */

/**
 * Sane bounds of load inputs, so a typo fails at load time with a message instead of an allocation crash
 * ("Invalid array length" at 1e12 tokens), a timer overflow (1e-9 req/s) or a run that never ends.
 */
export const LIMITS = { tokens: 10_000_000, count: 10_000_000, concurrency: 100_000, minRate: 0.001, maxRate: 100_000 } as const;

const positiveInt = z.number().int().positive().max(LIMITS.count, `expected at most ${LIMITS.count}`);
const tokenCount = z.number().int().positive().max(LIMITS.tokens, `expected at most ${LIMITS.tokens} tokens`);
const concurrency = z.number().int().positive().max(LIMITS.concurrency, `expected a concurrency of at most ${LIMITS.concurrency}`);

export const lengthDistributionSchema: z.ZodType<LengthDistribution> = z.union([
  z.object({ kind: z.literal('fixed'), value: tokenCount }).strict(),
  z
    .object({ kind: z.literal('uniform'), min: tokenCount, max: tokenCount })
    .strict()
    .refine((d) => d.min <= d.max, { message: 'min must be <= max' }),
  z
    .object({
      kind: z.literal('normal'),
      mean: z.number().positive().max(LIMITS.tokens, `expected at most ${LIMITS.tokens} tokens`),
      stddev: z.number().nonnegative().max(LIMITS.tokens),
      min: tokenCount.optional(),
      max: tokenCount.optional(),
    })
    .strict(),
]);

/**
 * A length given either as a distribution object or as the CLI shorthand (`512`, `normal:512,64`, `uniform:100,200`).
 * Dispatched on the value's type rather than a zod union, so the error is the one of the form the user wrote.
 */
export const lengthSpecSchema = acceptsFormsOf(
  z.unknown().transform((value, ctx): LengthDistribution => {
    const report = (issues: readonly z.core.$ZodIssue[]): never => {
      // Unknown keys forwarded whole, so the config loader lists the keys allowed; the rest keep their own words.
      for (const issue of issues) {
        ctx.addIssue(
          issue.code === 'unrecognized_keys' ? (issue as z.core.$ZodRawIssue) : { code: 'custom', path: issue.path as PropertyKey[], message: issue.message },
        );
      }
      return z.NEVER;
    };
    if (typeof value === 'number') {
      const parsed = tokenCount.safeParse(value);
      return parsed.success ? { kind: 'fixed', value: parsed.data } : report(parsed.error.issues);
    }
    if (typeof value === 'string') {
      try {
        return parseLengthSpec(value);
      } catch (error) {
        return report([{ code: 'custom', path: [], message: (error as Error).message, input: value }]);
      }
    }
    const parsed = lengthDistributionSchema.safeParse(value);
    return parsed.success ? parsed.data : report(parsed.error.issues);
  }),
  z.union([z.number().int().positive(), z.string(), lengthDistributionSchema]),
);

const fieldName = z.string().min(1);

/** Record field names of a dataset (see DatasetFields). */
export const datasetFieldsSchema = z
  .object({ prompt: fieldName, output: fieldName, outputTokens: fieldName, category: fieldName, conversations: fieldName })
  .partial()
  .strict();

export const promptSourceSchema: z.ZodType<PromptSource> = z.union([
  z
    .object({
      kind: z.literal('synthetic'),
      inputTokens: lengthSpecSchema,
      outputTokens: lengthSpecSchema,
      seed: z.number().int().default(0),
    })
    .strict(),
  z
    .object({
      kind: z.enum(DATASET_FORMATS),
      path: z.string().min(1),
      seed: z.number().int().default(0),
      shuffle: z.boolean().optional(),
      maxOutputTokens: tokenCount.optional(),
      fields: datasetFieldsSchema.optional(),
    })
    .strict(),
]) as z.ZodType<PromptSource>;

export const workloadSchema: z.ZodType<Workload> = z.union([
  z.object({ kind: z.literal('single-stream'), requests: positiveInt }).strict(),
  z.object({ kind: z.literal('concurrency'), concurrency, requests: positiveInt }).strict(),
  z
    .object({
      kind: z.literal('rate'),
      requestsPerSecond: z
        .number()
        .min(LIMITS.minRate, `expected at least ${LIMITS.minRate} requests per second`)
        .max(LIMITS.maxRate, `expected at most ${LIMITS.maxRate} requests per second`),
      arrival: z.enum(['poisson', 'constant']).default('poisson'),
      maxInFlight: concurrency.default(DEFAULT_MAX_IN_FLIGHT),
      requests: positiveInt,
    })
    .strict(),
  z.object({ kind: z.literal('sweep'), concurrencies: z.array(concurrency).min(1), requestsPerLevel: positiveInt }).strict(),
]) as z.ZodType<Workload>;

export const sloSchema: z.ZodType<Slo> = z
  .object({ ttftMs: z.number().positive().optional(), tpotMs: z.number().positive().optional(), e2eMs: z.number().positive().optional() })
  .strict();

/** Parse `512`, `fixed:512`, `normal:MEAN,STDDEV[,MIN,MAX]` or `uniform:MIN,MAX`. */
export function parseLengthSpec(text: string): LengthDistribution {
  const trimmed = text.trim();
  const [kindPart, argsPart] = trimmed.includes(':') ? (trimmed.split(':', 2) as [string, string]) : ['fixed', trimmed];
  const args = argsPart.split(',').map((part) => Number(part.trim()));
  const bad = (): never => {
    throw new Error(`invalid length "${text}": expected N, normal:MEAN,STDDEV[,MIN,MAX] or uniform:MIN,MAX with positive numbers`);
  };
  if (args.some((value) => !Number.isFinite(value) || value < 0)) bad();
  if (args.some((value) => value > LIMITS.tokens)) throw new Error(`invalid length "${text}": at most ${LIMITS.tokens} tokens`);
  switch (kindPart) {
    case 'fixed':
      if (args.length !== 1 || !Number.isInteger(args[0]) || args[0]! < 1) bad();
      return { kind: 'fixed', value: args[0]! };
    case 'uniform':
      if (args.length !== 2 || !args.every((v) => Number.isInteger(v) && v >= 1) || args[0]! > args[1]!) bad();
      return { kind: 'uniform', min: args[0]!, max: args[1]! };
    case 'normal': {
      if (args.length !== 2 && args.length !== 4) bad();
      const [mean, stddev, min, max] = args as [number, number, number?, number?];
      if (mean <= 0) bad();
      return min === undefined ? { kind: 'normal', mean, stddev } : { kind: 'normal', mean, stddev, min, max };
    }
    default:
      return bad();
  }
}

/** Parse `30s`, `500ms`, `2m`, or a bare number of seconds, into milliseconds. */
export function parseDurationMs(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!match)
    throw new UserError(
      `invalid duration "${text}": use e.g. 90s, 20m, 1h, 500ms or a number of seconds`,
      'write a duration like 90s, 20m or 1h',
      ExitCode.usage,
    );
  const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  const ms = Number(match[1]) * unitMs;
  if (ms <= 0) throw new UserError(`duration "${text}" must be positive`, 'give a duration above zero', ExitCode.usage);
  return ms;
}
