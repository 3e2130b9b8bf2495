import { z } from 'zod';
import { durationSchema } from '../../config/duration.js';
import { argvSchema, envNameList, envSchema } from '../../launch/server-schema.js';

/** zod schema of an experiment file's `search:` section (resolved into points and variants by ./search-space.ts). */

const knobName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a knob name of letters, digits and "_"');

const rangeSchema = z
  .strictObject({
    min: z.number().describe('Smallest value.'),
    max: z.number().describe('Largest value.'),
    step: z.number().positive().optional().describe('Values min, min + step, … up to max (default 1 for whole min and max).'),
    count: z.number().int().min(2).max(1000).optional().describe('Instead of step: this many values from min to max (rounded when min and max are whole).'),
    log: z.boolean().optional().describe('With count: values spaced evenly on a log scale (and modelled on it).'),
  })
  .refine((range) => range.max >= range.min, 'expected max >= min')
  .refine((range) => range.step === undefined || range.count === undefined, 'expected step or count, not both')
  .refine((range) => !range.log || (range.min > 0 && range.count !== undefined), 'log: true needs min > 0 and a count');

const knobSchema = z.union([z.array(z.union([z.number(), z.string()])).min(1), rangeSchema]).meta({
  title: 'knob',
  description:
    'A list of values ([1, 2, 4, 8] or names), or a range { min, max, step? | count?, log? } discretised to a list: whole numbers from min to max by default.',
});

/** `2%` or 0.02. */
const toleranceSchema = z.union([
  z.number().gt(0).lt(1),
  z
    .string()
    .regex(/^\s*\d+(?:\.\d+)?\s*%\s*$/, 'expected a percentage like "2%"')
    .transform((text) => Number.parseFloat(text) / 100)
    .refine((value) => value > 0 && value < 1, 'expected a percentage above 0% and below 100%'),
]);

export const searchSchema = z.strictObject({
  name: z
    .string()
    .min(1)
    .optional()
    .meta({
      description: "Variant name of a point; every knob must appear in it as {knob}. Default: each knob's name and value, e.g. steps3-topk2-draftTokens4.",
      examples: ['eagle3-s{steps}-k{topk}-d{draftTokens}'],
    }),
  knobs: z
    .record(knobName, knobSchema)
    .refine((knobs) => Object.keys(knobs).length > 0, 'expected at least one knob')
    .meta({
      description: 'The space: named knobs and the values each may take; a point is one value of every knob.',
      examples: [{ steps: { min: 1, max: 6 }, topk: [1, 2, 4, 8], draftTokens: { min: 2, max: 16 } }],
    }),
  args: argvSchema.optional().meta({
    description: 'Arguments appended to server.command, with {knob} placeholders filled per point (as grid does).',
    examples: [['--speculative-num-steps', '{steps}']],
  }),
  env: envSchema.optional().describe('Variables merged over server.env, with {knob} placeholders filled per point.'),
  unsetEnv: envNameList.optional().describe('Variables removed from the merged environment of every point.'),
  constraints: z
    .array(z.string().min(1))
    .default([])
    .meta({
      description: 'Comparisons every point must meet (+ - * / over numbers and numeric knobs; < <= > >= == !=); a point breaking one is never started.',
      examples: [['draftTokens <= steps * topk + 1']],
    }),
  tolerance: toleranceSchema.default(0.02).meta({
    description: "Points within this share of the best point's objective are as good as it; the tie-break picks among them.",
    examples: ['2%'],
  }),
  trialsPerStart: z
    .number()
    .int()
    .min(1)
    .max(20)
    .default(1)
    .describe(
      "Trials of each load level run back to back on a point's one server start in a block. They share that start's effect, so they count as one less noisy measurement, not several: raise it (2–3) when a start costs many trials' time and a trial's own noise is large beside a start's (bench/search-cost in docs/benchmarks.md measures the trade).",
    ),
  confidence: z.number().gt(0.5).lt(1).default(0.95).describe('Confidence of the final "within the tolerance of the best" statement.'),
  tieBreak: z
    .array(z.string().min(1))
    .default([])
    .meta({
      description:
        'Among points within the tolerance of the best, which is preferred: knobs ascending ("draftTokens"; "steps desc" for descending) or metrics at their better end (joulesPerToken, ttftP99Ms), first entry first.',
      examples: [['draftTokens', 'joulesPerToken']],
    }),
  budget: z
    .strictObject({
      gpuHours: z.number().positive().optional().describe('GPU-hours the search may spend (wall time × gpusPerServer).'),
      wallTime: durationSchema.optional().meta({ description: 'Wall time the search may spend.', examples: ['4h'] }),
      gpusPerServer: z.number().int().min(1).default(1).describe('GPUs one server occupies, for gpuHours.'),
    })
    .refine((budget) => budget.wallTime !== undefined || budget.gpuHours !== undefined, 'expected wallTime and/or gpuHours')
    .optional()
    .describe(
      'Checked between blocks: the first check that finds it spent ends the search, which then says what is and is not resolved. A block started before it ran out runs whole, so a search may exceed it by up to one block (`plan` says how much).',
    ),
});

export type SearchSpec = z.output<typeof searchSchema>;
export type KnobSpec = z.output<typeof knobSchema>;
