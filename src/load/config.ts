import { z } from 'zod';
import { durationSchema } from '../config/duration.js';
import { acceptsFormsOf } from '../config/issues.js';
import { DEFAULT_CAPACITY_STEPS, DEFAULT_INPUT_TOKENS, DEFAULT_MAX_IN_FLIGHT, DEFAULT_PROMPT_SEED, DEFAULT_SYNTHETIC_OUTPUT_TOKENS } from '../util/defaults.js';
import { DEFAULT_OUTPUT_TOKENS } from './datasets/load.js';
import { DATASET_FORMATS } from './datasets/types.js';
import { sessionsSchema, sharedPrefixSchema } from './shape-config.js';
import { TRACE_FORMATS } from './trace/types.js';
import { ARRIVAL_PROCESSES, type CapacitySlo, type LengthDistribution, type PromptSource, type Slo, type Workload } from './types.js';

/**
 * zod schemas for the workload / prompts / SLO sections of a benchmark, shared by `servelab bench` and the
 * experiment file's `workloads:` entries. They parse straight into the contract types of ./types.ts.
 */

/**
 * Sane bounds of load inputs, so a typo fails at load time with a message instead of an allocation crash
 * ("Invalid array length" at 1e12 tokens), a timer overflow (1e-9 req/s) or a run that never ends.
 */
export const LIMITS = {
  tokens: 10_000_000,
  count: 10_000_000,
  concurrency: 100_000,
  minRate: 0.001,
  maxRate: 100_000,
  minBurstiness: 0.01,
  maxBurstiness: 10_000,
  minSpeedup: 0.001,
  maxSpeedup: 1_000_000,
  maxMs: 86_400_000,
} as const;

const positiveMs = z.number().positive().max(LIMITS.maxMs, `expected at most ${LIMITS.maxMs} ms`);

export const capacitySloSchema: z.ZodType<CapacitySlo> = z
  .object({
    ttftP99Ms: positiveMs.optional().describe("Most a step's p99 time to first token may be, in ms."),
    tpotP99Ms: positiveMs.optional().describe("Most a step's p99 time per output token may be, in ms."),
    e2eP99Ms: positiveMs.optional().describe("Most a step's p99 end-to-end latency may be, in ms."),
  })
  .strict()
  .refine((slo) => Object.keys(slo).length > 0, 'expected at least one of ttftP99Ms, tpotP99Ms, e2eP99Ms');

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
  .object({
    prompt: fieldName.meta({ description: 'Field holding the prompt text.', default: 'prompt' }),
    output: fieldName.meta({ description: "Field holding a reference reply: its token count is the request's output length.", default: 'output' }),
    outputTokens: fieldName.meta({ description: 'Field holding an explicit output length in tokens.', default: 'max_tokens' }),
    category: fieldName.meta({ description: 'Field holding a category: the result is also summarised per category.', default: 'category' }),
    conversations: fieldName.meta({ description: 'Field holding a ShareGPT conversation.', default: 'conversations' }),
  })
  .partial()
  .strict();

const promptSeed = z.number().int().default(DEFAULT_PROMPT_SEED);
/** A token length in a file: defaulted through the form a file writes (a number), named "token length" in the reference. */
const tokenLength = (tokens: number, description: string) =>
  lengthSpecSchema.prefault(tokens).meta({ title: 'token length', description, examples: ['normal:512,64'] });

/** A time into a trace: 0, or a duration ("90s", "20m", seconds as a number); in ms. */
const traceOffset = z.union([z.literal(0), durationSchema]).meta({ title: 'duration' });

export const traceSourceSchema = z
  .object({
    kind: z
      .literal('trace')
      .describe(
        "A production trace's input and output lengths (its arrival times are replayed by a trace workload that names it); Mooncake hash blocks become shared prompt prefixes.",
      ),
    path: z
      .string()
      .min(1)
      .meta({
        description: 'The trace file, relative to the experiment file (read on the host, as written, by a remote client).',
        examples: ['mooncake_trace.jsonl'],
      }),
    format: z
      .enum(TRACE_FORMATS)
      .describe(
        'mooncake: JSONL {timestamp (ms), input_length, output_length, hash_ids}; burstgpt: CSV Timestamp (s), Request tokens, Response tokens; azure: CSV TIMESTAMP (date-time), ContextTokens, GeneratedTokens.',
      ),
    speedup: z
      .number()
      .min(LIMITS.minSpeedup, `expected a speedup of at least ${LIMITS.minSpeedup}`)
      .max(LIMITS.maxSpeedup, `expected a speedup of at most ${LIMITS.maxSpeedup}`)
      .optional()
      .meta({ description: 'Arrivals this many times faster than recorded (0.5: twice as slow).', default: 1 }),
    window: z
      .object({
        start: traceOffset.optional().meta({ description: "Start of the stretch replayed, from the trace's first request.", default: '0s' }),
        end: traceOffset.optional().describe('End of the stretch (excluded); default: the end of the trace.'),
      })
      .strict()
      .refine((window) => window.end === undefined || window.end > (window.start ?? 0), { message: 'end must be after start', path: ['end'] })
      .transform(({ start, end }) => ({ startMs: start ?? 0, ...(end !== undefined && { endMs: end }) }))
      .optional()
      .meta({ description: 'The stretch of the trace replayed, in trace time (before the speedup).', examples: [{ start: '10m', end: '15m' }] }),
    seed: promptSeed.describe("Seed of the prompts' words (a hash block's words depend only on it and the block's id)."),
    maxOutputTokens: tokenCount.optional().describe("Cap on each request's output tokens."),
  })
  .strict();

export const promptSourceSchema: z.ZodType<PromptSource> = z.union([
  z
    .object({
      kind: z.literal('synthetic').describe('Generated prompts of the lengths asked for.'),
      inputTokens: tokenLength(
        DEFAULT_INPUT_TOKENS,
        'Prompt length in tokens: that many common words (about as many tokens), or exactly that many tokens with `tokenizer`.',
      ),
      outputTokens: tokenLength(DEFAULT_SYNTHETIC_OUTPUT_TOKENS, 'Output length asked for (max_tokens; exact with ignoreEos).'),
      seed: promptSeed.describe('Seed of the lengths and words of the prompts, and of Poisson arrivals.'),
    })
    .strict(),
  z
    .object({
      kind: z
        .enum(DATASET_FORMATS)
        .describe('sharegpt: every reply of a conversation is a request (multi-turn); jsonl, csv, parquet: one record, one request.'),
      path: z
        .string()
        .min(1)
        .meta({
          description: 'The dataset file, relative to the experiment file (read on the host, as written, by a remote client).',
          examples: ['sharegpt.json'],
        }),
      seed: promptSeed.describe('Seed of the shuffled order and of Poisson arrivals.'),
      shuffle: z.boolean().optional().describe('Send requests in an order shuffled by seed; default: true for sharegpt, file order otherwise.'),
      maxOutputTokens: tokenCount
        .optional()
        .describe(`Cap on each request's output tokens (a record with no length of its own asks ${DEFAULT_OUTPUT_TOKENS}).`),
      fields: datasetFieldsSchema.optional().meta({ description: 'Which record field holds what (see its keys).', examples: [{ prompt: 'question' }] }),
    })
    .strict(),
  traceSourceSchema,
  sessionsSchema(tokenLength, promptSeed),
  sharedPrefixSchema(tokenLength, promptSeed),
]) as z.ZodType<PromptSource>;

export const workloadSchema: z.ZodType<Workload> = z.union([
  z
    .object({
      kind: z.literal('single-stream').describe('One request at a time: the decode speed of a single stream.'),
      requests: positiveInt.describe('Requests measured (after the warm-up).'),
    })
    .strict(),
  z
    .object({
      kind: z.literal('concurrency').describe('Closed loop: a new request as soon as one finishes.'),
      concurrency: concurrency.describe('Requests kept in flight.'),
      requests: positiveInt.describe('Requests measured (after the warm-up; at least concurrency).'),
    })
    .strict()
    .refine((closed) => closed.requests >= closed.concurrency, {
      path: ['requests'],
      message: 'needs at least concurrency requests: fewer never have that many in flight, yet the level would be labelled with it',
    }),
  z
    .object({
      kind: z
        .literal('rate')
        .describe("Open loop: requests arrive on a schedule whatever the server's speed; TTFT and latency count from the scheduled arrival."),
      requestsPerSecond: z
        .number()
        .min(LIMITS.minRate, `expected at least ${LIMITS.minRate} requests per second`)
        .max(LIMITS.maxRate, `expected at most ${LIMITS.maxRate} requests per second`)
        .describe('Mean arrival rate.'),
      arrival: z
        .enum(ARRIVAL_PROCESSES)
        .default('poisson')
        .describe('poisson: random gaps (seeded by prompts.seed); constant: equal gaps; gamma: gamma-distributed gaps shaped by burstiness.'),
      burstiness: z
        .number()
        .min(LIMITS.minBurstiness, `expected at least ${LIMITS.minBurstiness}`)
        .max(LIMITS.maxBurstiness, `expected at most ${LIMITS.maxBurstiness}`)
        .optional()
        .describe("Shape of gamma arrivals (vLLM bench serve's --burstiness): 1 = Poisson, below 1 burstier, above 1 more regular."),
      maxInFlight: concurrency.default(DEFAULT_MAX_IN_FLIGHT).describe('Cap on requests in flight; later arrivals wait (and the wait counts).'),
      requests: positiveInt.describe('Requests measured (after the warm-up).'),
    })
    .strict()
    .refine((rate) => (rate.burstiness !== undefined) === (rate.arrival === 'gamma'), {
      path: ['burstiness'],
      message: 'only gamma arrivals take a burstiness, and they need one (1 = Poisson, below 1 burstier, above 1 more regular)',
    }),
  z
    .object({
      kind: z
        .literal('trace')
        .describe(
          "Open loop on the recorded arrival times of its trace (`trace:`), divided by the trace's speedup; TTFT and latency count from the scheduled arrival.",
        ),
      requests: positiveInt.optional().describe("Requests measured (the window's first ones); default: every request in the window."),
      maxInFlight: concurrency.default(DEFAULT_MAX_IN_FLIGHT).describe('Cap on requests in flight; later arrivals wait (and the wait counts).'),
    })
    .strict(),
  z
    .object({
      kind: z.literal('sweep').describe('Shorthand for one concurrency workload per level.'),
      concurrencies: z
        .array(concurrency)
        .min(1)
        .meta({ description: 'The levels.', examples: [[1, 8, 32]] }),
      requestsPerLevel: positiveInt.describe('Requests measured at each level (at least the highest concurrency).'),
    })
    .strict()
    .refine((sweep) => sweep.requestsPerLevel >= Math.max(...sweep.concurrencies), {
      path: ['requestsPerLevel'],
      message: 'needs at least the highest concurrency: fewer requests never have that many in flight, yet the level would be labelled with it',
    }),
  capacityWorkloadSchema(),
]) as z.ZodType<Workload>;

/** A capacity workload: bounds checked per axis (whole requests in flight, rates within LIMITS), rate fields only over rate. */
function capacityWorkloadSchema() {
  return (
    z
      .object({
        kind: z
          .literal('capacity')
          .describe('SLO capacity: the highest rate or concurrency whose p99 latencies meet slo with no request failed, found by bisection.'),
        over: z.enum(['rate', 'concurrency']).describe('What the search varies: open-loop requests per second, or requests in flight.'),
        min: z.number().positive().describe('Lowest level searched (measured only when every step failed: the capacity is then 0 or min).'),
        max: z.number().positive().describe('Highest level searched (measured only when every step passed: the capacity is then "≥ max").'),
        steps: z.number().int().min(1).max(30).default(DEFAULT_CAPACITY_STEPS).describe('Bisection steps (levels measured, plus at most one bound).'),
        requestsPerStep: positiveInt.describe("Requests measured at each step; below 100 a step's p99 is close to its slowest request."),
        slo: capacitySloSchema.meta({ description: 'The p99 limits every passing step meets.', examples: [{ ttftP99Ms: 500, tpotP99Ms: 50 }] }),
        arrival: z.enum(ARRIVAL_PROCESSES).optional().describe('over: rate: the arrival process (default poisson), as in a rate workload.'),
        burstiness: z.number().min(LIMITS.minBurstiness).max(LIMITS.maxBurstiness).optional().describe('over: rate, gamma arrivals: their shape.'),
        maxInFlight: concurrency.optional().describe(`over: rate: cap on requests in flight (default ${DEFAULT_MAX_IN_FLIGHT}).`),
      })
      .strict()
      .refine((search) => search.min < search.max, { path: ['max'], message: 'must be above min' })
      .refine((search) => search.over === 'rate' || (Number.isInteger(search.min) && Number.isInteger(search.max) && search.max <= LIMITS.concurrency), {
        path: ['min'],
        message: `a concurrency search takes whole numbers of requests in flight, at most ${LIMITS.concurrency}`,
      })
      .refine((search) => search.over === 'rate' || search.requestsPerStep >= search.max, {
        path: ['requestsPerStep'],
        message: 'a concurrency search needs at least max requests per step: fewer never reach max in flight',
      })
      .refine((search) => search.over === 'concurrency' || (search.min >= LIMITS.minRate && search.max <= LIMITS.maxRate), {
        path: ['min'],
        message: `a rate search takes rates from ${LIMITS.minRate} to ${LIMITS.maxRate} requests per second`,
      })
      .refine((search) => search.over === 'rate' || (search.arrival ?? search.burstiness ?? search.maxInFlight) === undefined, {
        path: ['over'],
        message: 'arrival, burstiness and maxInFlight shape the arrivals of a rate search (over: rate)',
      })
      .refine((search) => search.burstiness === undefined || search.arrival === 'gamma', {
        path: ['burstiness'],
        message: 'only gamma arrivals take a burstiness (arrival: gamma)',
      })
      .refine((search) => search.arrival !== 'gamma' || search.burstiness !== undefined, {
        path: ['burstiness'],
        message: 'gamma arrivals need a burstiness (1 = Poisson, below 1 burstier, above 1 more regular)',
      })
      // A rate search's arrivals written out, as a rate workload's are: `bench` flags and a remote client's argv say the same.
      .transform((search) => (search.over === 'rate' ? { arrival: 'poisson' as const, maxInFlight: DEFAULT_MAX_IN_FLIGHT, ...search } : search))
  );
}

export const sloSchema: z.ZodType<Slo> = z
  .object({
    ttftMs: z.number().positive().optional().describe('Time to first token a good request stays within, in ms.'),
    tpotMs: z.number().positive().optional().describe('Time per output token a good request stays within, in ms.'),
    e2eMs: z.number().positive().optional().describe('End-to-end latency a good request stays within, in ms.'),
  })
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
