import { z } from 'zod';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import type { LengthDistribution, PromptSource, Slo, Workload } from './types.js';

/**
 * zod schemas for the workload / prompts / SLO sections of a benchmark, shared by `servelab bench` and the
 * experiment file's `workloads:` entries. They parse straight into the contract types of ./types.ts.
 */

const positiveInt = z.number().int().positive();

export const lengthDistributionSchema: z.ZodType<LengthDistribution> = z.union([
  z.object({ kind: z.literal('fixed'), value: positiveInt }).strict(),
  z
    .object({ kind: z.literal('uniform'), min: positiveInt, max: positiveInt })
    .strict()
    .refine((d) => d.min <= d.max, { message: 'min must be <= max' }),
  z
    .object({
      kind: z.literal('normal'),
      mean: z.number().positive(),
      stddev: z.number().nonnegative(),
      min: positiveInt.optional(),
      max: positiveInt.optional(),
    })
    .strict(),
]);

/** A length given either as a distribution object or as the CLI shorthand (`512`, `normal:512,64`, `uniform:100,200`). */
export const lengthSpecSchema = z.union([
  positiveInt.transform((value): LengthDistribution => ({ kind: 'fixed', value })),
  z.string().transform((text, ctx): LengthDistribution => {
    try {
      return parseLengthSpec(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  }),
  lengthDistributionSchema,
]);

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
    .object({ kind: z.literal('sharegpt'), path: z.string().min(1), seed: z.number().int().default(0), maxOutputTokens: positiveInt.optional() })
    .strict(),
  z.object({ kind: z.literal('jsonl'), path: z.string().min(1), maxOutputTokens: positiveInt.optional() }).strict(),
]) as z.ZodType<PromptSource>;

export const workloadSchema: z.ZodType<Workload> = z.union([
  z.object({ kind: z.literal('single-stream'), requests: positiveInt }).strict(),
  z.object({ kind: z.literal('concurrency'), concurrency: positiveInt, requests: positiveInt }).strict(),
  z
    .object({
      kind: z.literal('rate'),
      requestsPerSecond: z.number().positive(),
      arrival: z.enum(['poisson', 'constant']).default('poisson'),
      maxInFlight: positiveInt,
      requests: positiveInt,
    })
    .strict(),
  z.object({ kind: z.literal('sweep'), concurrencies: z.array(positiveInt).min(1), requestsPerLevel: positiveInt }).strict(),
]) as z.ZodType<Workload>;

export const sloSchema: z.ZodType<Slo> = z
  .object({ ttftMs: z.number().positive().optional(), tpotMs: z.number().positive().optional(), e2eMs: z.number().positive().optional() })
  .strict();

/** Parse `512`, `fixed:512`, `normal:MEAN,STDDEV[,MIN,MAX]` or `uniform:MIN,MAX`. */
export function parseLengthSpec(text: string): LengthDistribution {
  const trimmed = text.trim();
  const [kindPart, argsPart] = trimmed.includes(':') ? trimmed.split(':', 2) as [string, string] : ['fixed', trimmed];
  const args = argsPart.split(',').map((part) => Number(part.trim()));
  const bad = (): never => {
    throw new Error(`invalid length "${text}": expected N, normal:MEAN,STDDEV[,MIN,MAX] or uniform:MIN,MAX with positive numbers`);
  };
  if (args.some((value) => !Number.isFinite(value) || value < 0)) bad();
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
  if (!match) throw new UserError(`invalid duration "${text}": use e.g. 90s, 20m, 1h, 500ms or a number of seconds`, 'write a duration like 90s, 20m or 1h', ExitCode.usage);
  const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  const ms = Number(match[1]) * unitMs;
  if (ms <= 0) throw new UserError(`duration "${text}" must be positive`, 'give a duration above zero', ExitCode.usage);
  return ms;
}
