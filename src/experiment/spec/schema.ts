import { z } from 'zod';
import { durationSchema } from '../../config/duration.js';
import { acceptsFormsOf } from '../../config/issues.js';
import { kindsOf, optionsOf } from '../../config/schema-doc.js';
import { executorConfigSchema, laneExecutorSchema, slurmLaneSchema } from '../../exec/config.js';
import { argvSchema, envNameList, envSchema, serverSchema, serverShape } from '../../launch/server-schema.js';
import { promptSourceSchema, sloSchema, traceSourceSchema, workloadSchema } from '../../load/config.js';
import type { TraceSource } from '../../load/trace/types.js';
import type { Workload } from '../../load/types.js';
import { parseScorer, SCORER_FORMS } from '../../metrics/answer-score.js';
import { BUILTIN_PROFILES } from '../../profiles/builtin.js';
import { BACKEND_KINDS } from '../../profiles/types.js';
import {
  DEFAULT_INPUT_TOKENS,
  DEFAULT_LOAD_WORKERS,
  DEFAULT_MAX_FAILED_FRACTION,
  DEFAULT_REQUEST_TIMEOUT,
  DEFAULT_SYNTHETIC_OUTPUT_TOKENS,
  DEFAULT_WARMUP_PER_WORKLOAD,
  DEFAULT_WARMUP_REQUESTS,
  MAX_REQUEST_TOKENS,
} from '../../util/defaults.js';
import { CONSTRAINT } from './constraint.js';
import { searchSchema } from './search-schema.js';
import { METRIC_NAMES } from './types.js';

/** zod schema of an experiment file as written by the user (before grid expansion and defaults of ./load.ts). */

/** Variant names end up in store rows, file names, HTML and Markdown: letters, digits, ".", "_" or "-" only. */
export const VARIANT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export const VARIANT_NAME_RULE = 'expected a variant name of letters, digits, ".", "_" or "-"';

// Optional here (a variant's value replaces the experiment's only when given); the defaults named with
// `.meta({ default })` are the ones ./load.ts resolves to, from the defaults bench's flags use too.
const clientOverridesSchema = z.strictObject({
  prompts: promptSourceSchema.optional().meta({
    description: 'Where prompts come from: generated (synthetic), a dataset file, a production trace, multi-turn sessions or shared prefixes.',
    default: { kind: 'synthetic', inputTokens: DEFAULT_INPUT_TOKENS, outputTokens: DEFAULT_SYNTHETIC_OUTPUT_TOKENS },
  }),
  warmupRequests: z.number().int().min(0).max(100_000).optional().describe('Short for warmup.requests (kept for older files; give one of the two).'),
  warmup: z
    .strictObject({
      requests: z.number().int().min(0).max(100_000).optional().meta({
        description: 'Warm-up requests, not counted (raised to one per worker, per workload to one per concurrent slot; 0: none).',
        default: DEFAULT_WARMUP_REQUESTS,
      }),
      seconds: durationSchema.optional().describe('Instead of requests: warm-up rounds until this long has passed.'),
      perWorkload: z.boolean().optional().meta({
        description:
          "true: each workload (each level of a sweep) is warmed at its own concurrency or rate before its first trial after a server start, and later trials on that start get none; false: every trial gets the warm-up, at most as many in flight as its workload's.",
        default: DEFAULT_WARMUP_PER_WORKLOAD,
      }),
    })
    .optional()
    .describe("Requests sent before measuring, to bring the server to the workload's steady state (new batch sizes are slow at first)."),
  ignoreEos: z
    .boolean()
    .optional()
    .meta({ description: 'Ask the server to ignore end-of-sequence, so every request produces exactly its output length.', default: true }),
  requestTimeout: durationSchema
    .optional()
    .meta({ description: 'A request that receives nothing for this long fails as a stall.', default: DEFAULT_REQUEST_TIMEOUT }),
  model: z.string().min(1).optional().describe('Model name sent with requests; default: server.model, else the first of /v1/models.'),
  tokenizer: z
    .string()
    .min(1)
    .optional()
    .meta({
      description:
        "The model's tokenizer.json, model directory or NAME-<encoding>.tiktoken file: exact prompt lengths, the chat template, token counts when the server reports no usage.",
      examples: ['/models/Llama-3.1-8B-Instruct'],
    }),
  contextTokens: z
    .number()
    .int()
    .positive()
    .optional()
    .meta({
      description: `The model's context in tokens (vLLM --max-model-len, SGLang --context-length): a trace or dataset request that cannot fit (prompt + output; a dataset prompt when the tokenizer measures it) is refused before any server starts. Unset: a cap of ${MAX_REQUEST_TOKENS} tokens.`,
      examples: [32768],
    }),
  workers: z
    .union([z.literal('auto'), z.number().int().positive()])
    .optional()
    .meta({ description: 'Load-generation threads, each with its own connections: a count or auto (one per core).', default: DEFAULT_LOAD_WORKERS }),
  requireFullOutput: z
    .boolean()
    .optional()
    .meta({ description: 'With ignoreEos: a trial whose requests stop short of their output length is invalid; false accepts them.', default: true }),
  tokenCounts: z
    .enum(['usage', 'stream', 'tokenizer'])
    .optional()
    .describe(
      "The output-token count to trust when the server's usage, the stream's events and the tokenizer disagree; unset: a disagreement makes the trial invalid.",
    ),
});

const clientSchema = clientOverridesSchema.extend({
  backend: z.enum(BACKEND_KINDS).optional().describe("The wire format requests are sent in; default: the profile's."),
  slo: sloSchema.optional().describe('Goodput: the share (and rate) of requests meeting every SLO given.'),
  // One value for all variants: a comparison between a cold and a warm variant would measure the cache.
  cache: z
    .enum(['cold', 'warm', 'reset'])
    .default('cold')
    .describe(
      "cold: each trial's prompts open with a per-trial salt, so no prefix-cache hit crosses trials; warm: the same prompts in every trial (a trial's cache state then depends on its place in the plan); reset: cold through the profile's cache-reset API (vLLM /reset_prefix_cache, SGLang /flush_cache, llama.cpp cache_prompt: false).",
    ),
});

const variantSchema = z.strictObject({
  args: argvSchema.optional().meta({ description: 'Arguments appended to server.command.', examples: [['--enable-chunked-prefill']] }),
  env: envSchema
    .optional()
    .meta({ description: 'Variables merged over server.env (the variant wins per name).', examples: [{ VLLM_ATTENTION_BACKEND: 'FLASHINFER' }] }),
  unsetEnv: envNameList.optional().describe('Variables removed from the merged environment.'),
  client: clientOverridesSchema.optional().describe("`client:` keys (all but backend, slo and cache) that replace the experiment's for this variant."),
});

const gridSchema = variantSchema.extend({
  name: z
    .string()
    .min(1)
    .meta({ description: 'Variant name template; every parameter must appear in it as {param}.', examples: ['eagle3-s{steps}-d{draft}'] }),
  params: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'expected a parameter name'), z.array(z.union([z.string(), z.number()])).min(1))
    .refine((params) => Object.keys(params).length > 0, 'expected at least one parameter')
    .meta({ description: 'Values of each parameter; every combination becomes a variant.', examples: [{ steps: [2, 4], draft: [1, 3] }] }),
});

const WORKLOAD_KINDS = ['single-stream', 'concurrency', 'rate', 'sweep', 'trace', 'capacity'] as const;

/**
 * A trace workload owns the trace it replays (the file, its window and its speedup belong to the replay), so a
 * speedup with no replay, or a replay of prompts that are no trace, cannot be written. Other workloads take the
 * variant's `client.prompts` (a trace there gives lengths only).
 */
const replayedTraceSchema = traceSourceSchema.omit({ kind: true });

/** A workload entry as written: a trace workload with the trace it replays (absent in files written before it had one). */
export type WorkloadEntry = Workload | (Extract<Workload, { kind: 'trace' }> & { trace: TraceSource });

/** The forms a workload entry accepts (the file reference lists them). */
export const workloadFormsSchema: z.ZodType = z.union(
  optionsOf(workloadSchema).map((form) =>
    kindsOf(form).includes('trace')
      ? (form as z.ZodObject).extend({
          trace: replayedTraceSchema.optional().meta({
            description:
              'The trace replayed: its path, format, speedup, window, seed and maxOutputTokens (keys as in client.prompts kind trace, without kind).',
            examples: [{ path: 'mooncake_trace.jsonl', format: 'mooncake', speedup: 2 }],
          }),
        })
      : form,
  ) as [z.ZodType, ...z.ZodType[]],
);

/**
 * The load module's workload schema (a trace workload with its own `trace:`), with the error of the branch the
 * user meant (by `kind`) instead of zod's generic "Invalid input" for a failed union.
 */
const workloadEntrySchema = acceptsFormsOf(
  z.unknown().transform((value, ctx): WorkloadEntry => {
    const written = value as { kind?: unknown; trace?: unknown } | null;
    if (written?.kind === 'trace' && written.trace !== undefined) {
      const { trace, ...replay } = written;
      const workload = workloadSchema.safeParse(replay);
      const source = replayedTraceSchema.safeParse(trace);
      for (const issue of workload.error?.issues ?? []) ctx.addIssue(issue as z.core.$ZodRawIssue);
      for (const issue of source.error?.issues ?? []) ctx.addIssue({ ...(issue as z.core.$ZodRawIssue), path: ['trace', ...issue.path] });
      if (!workload.success || !source.success) return z.NEVER;
      return { ...(workload.data as Extract<Workload, { kind: 'trace' }>), trace: { kind: 'trace', ...source.data } };
    }
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
  workloadFormsSchema,
);

/** What a constraint on a metric is, e.g. "< 500" or ">= 20"; accuracy also takes ">= baseline - 1%" (spec/constraint.ts `parseConstraint`). */
const COMPARISON_EXPECTED = 'expected a comparison like "< 500", ">= 20" or (accuracy) ">= baseline - 1%"';

/** quality.accuracy: a sample set of {prompt, answer, category?} records and how answers are scored. */
const accuracySchema = z.strictObject({
  path: z
    .string()
    .min(1)
    .meta({ description: 'JSONL or CSV file of records {prompt, answer, category?}, relative to the experiment file.', examples: ['arith.jsonl'] }),
  scorer: z
    .string()
    .refine((text) => parseScorer(text) !== undefined, `expected a scorer: ${SCORER_FORMS}`)
    .meta({
      description:
        "exact (trimmed, case-insensitive equality), last-number (the last number of the answer, commas dropped, equals the answer's), regex:PATTERN (its first group, else its match, equals the answer), choice (the letter A–D the answer picks).",
      examples: ['last-number'],
    }),
  items: z.number().int().min(1).optional().describe('Records sent, from the top of the file; default: all.'),
  outputTokens: z.number().int().min(1).max(32768).default(256).describe('Most tokens of each answer (the model may stop sooner).'),
  fields: z
    .strictObject({
      prompt: z.string().min(1).default('prompt'),
      answer: z.string().min(1).default('answer'),
      category: z.string().min(1).default('category'),
    })
    .prefault({})
    .describe("The records' field names: { prompt, answer, category } (category optional in each record: accuracy is broken down by it)."),
});

/** A metric name (the reference lists them with their units). */
const metricName = z.enum(METRIC_NAMES).meta({ title: 'metric name' });

const objectiveSchema = z
  .strictObject({
    maximize: metricName.optional().describe('The metric to maximize; give this or minimize.'),
    minimize: metricName.optional().describe('The metric to minimize; give this or maximize.'),
    subjectTo: z
      .partialRecord(z.enum([...METRIC_NAMES, 'outputs', 'outputMatch', 'accuracy']), z.string().meta({ title: 'comparison, or (outputs) "equivalent"' }))
      // One value type for every key, told apart here: outputs takes a status, every other key a comparison.
      .superRefine((constraints, context) => {
        for (const [key, value] of Object.entries(constraints)) {
          const expected =
            key === 'outputs'
              ? value !== 'equivalent' && 'expected "equivalent": outputs are judged by their status against the A/A floor (a share of tokens is outputMatch)'
              : !CONSTRAINT.test(value!) && COMPARISON_EXPECTED;
          if (expected) context.addIssue({ code: 'custom', path: [key], message: expected });
        }
      })
      .default({})
      .meta({
        description:
          "Constraints on a config's medians on the objective's workload; a config breaking one cannot be best. outputs: equivalent: only configs whose greedy answers are equivalent to the baseline's within its A/A floor (turns quality.equivalence on; by default a config whose outputs changed is infeasible anyway). outputMatch: token agreement with the baseline's greedy answers, a fixed share (warned of when stricter than the run's A/A floor). accuracy: quality.accuracy's score, a share (\">= 0.8\") or the baseline's less percentage points (\">= baseline - 1%\").",
        examples: [{ ttftP99Ms: '< 500', outputs: 'equivalent' }],
      }),
    workload: z
      .string()
      .optional()
      .describe(
        'The workload (by its name, see workload names) the objective is judged on; default: the first (for sloCapacity: the first capacity workload, the only kind that measures it).',
      ),
  })
  .refine((objective) => (objective.maximize === undefined) !== (objective.minimize === undefined), 'expected exactly one of maximize or minimize');

const budgetSchema = z
  .strictObject({
    wallTime: durationSchema.optional().meta({ description: 'Predicted wall time the plan may take.', examples: ['8h'] }),
    gpuHours: z.number().positive().optional().describe('Predicted GPU-hours the plan may take (wall time × gpusPerServer).'),
    gpusPerServer: z.number().int().min(1).default(1).describe('GPUs one server occupies, for gpuHours.'),
  })
  .refine((budget) => budget.wallTime !== undefined || budget.gpuHours !== undefined, 'expected wallTime and/or gpuHours');

/**
 * One lane: a place where a server of this experiment can run while the other lanes run theirs. Every key is
 * optional; what is given goes over the experiment's `server:` (env, port range) and `executor:`.
 */
const laneSchema = z.strictObject({
  name: z
    .string()
    .regex(VARIANT_NAME, 'expected a lane name of letters, digits, ".", "_" or "-"')
    .optional()
    .meta({ description: 'How run text, show and the report name the lane; default: lane N (from 1).', examples: ['gpus-0-3'] }),
  env: envSchema
    .optional()
    .meta({ description: "Variables set in this lane's servers, over server.env and the variant's env.", examples: [{ CUDA_VISIBLE_DEVICES: '0,1,2,3' }] }),
  portRange: serverShape.portRange.describe("Where this lane's servers pick their free port; default: server.portRange, else below the ephemeral range."),
  executor: laneExecutorSchema.optional().describe('Where this lane runs (an SSH host); default: the experiment executor.'),
  slurm: slurmLaneSchema
    .optional()
    .describe("With executor kind slurm: this lane's jobs' sbatch settings over the executor's (partition, gpusPerJob, timeLimit, sbatchArgs)."),
  count: z
    .number()
    .int()
    .min(1)
    .max(64)
    .optional()
    .describe('With executor kind slurm: this many concurrent jobs, each a lane for its lifetime (named NAME-1 … NAME-N, or lane N); default: 1.'),
});

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
  server: serverSchema.describe('How to start the server; the keys of a `servelab launch --config` file.'),
  executor: executorConfigSchema.describe('Where servers run: this machine, an SSH host or a Slurm cluster.'),
  lanes: z
    .array(laneSchema.nullable().transform((lane) => lane ?? {}))
    .min(1, 'expected at least one lane')
    .max(64)
    .optional()
    .meta({
      description:
        'Places where servers run at the same time (GPUs of this box, SSH hosts, Slurm jobs): each lane runs whole passes, measuring the baseline in each, and verdicts compare configs within lanes. Default: one lane (with executor kind slurm: one job).',
      examples: [[{ env: { CUDA_VISIBLE_DEVICES: '0,1,2,3' } }, { env: { CUDA_VISIBLE_DEVICES: '4,5,6,7' } }]],
    }),
  fingerprint: z
    .strictObject({
      envPatterns: z
        .array(z.string())
        .default([])
        .meta({
          description:
            "Glob patterns (`*`, `?`) of variable names a fingerprint records from the server's environment, on top of the built-in ones (NCCL_*, CUDA_*, VLLM_*, SGLANG_*, …).",
          examples: [['MY_KERNEL_*']],
        }),
      redact: z
        .array(z.string())
        .default([])
        .meta({
          description:
            'Glob patterns of names (env variables, flags as ENV names: --my-key is MY_KEY, JSON keys) whose values are secrets, matched ignoring case, on top of the built-in ones (TOKEN, KEY, AUTH, PASS as whole words; *SECRET*, *PASSWORD*, …): hidden in every store row, log header, stored command line, printed or served answer of the run.',
          examples: [['*_LICENSE']],
        }),
    })
    .default({ envPatterns: [], redact: [] })
    .describe("What a trial's fingerprint records of the server's environment, and which values it hides."),
  client: clientSchema.prefault({}).describe('The load client: prompts, warm-up, timeouts, SLOs, cache mode.'),
  workloads: z
    .array(workloadEntrySchema)
    .min(1, 'expected at least one workload')
    .meta({ description: 'What each trial measures; see the workload kinds below.', examples: [[{ kind: 'single-stream', requests: 16 }]] }),
  trials: z.number().int().min(1).max(1000).default(5).describe('Repetitions of every (variant, workload) pair; ≥ 4 for a rank test to reach p < 0.05.'),
  seed: z.number().int().default(1).describe('Seed of the plan order.'),
  baseline: z.string().optional().describe('The variant the others are compared with; default: the first variant.'),
  metric: metricName.default('outputTokensPerSecond').describe('The metric of verdicts and the drift alarm (see metric names).'),
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
  preflight: z
    .enum(['strict', 'warn', 'off'])
    .default('warn')
    .describe('Machine checks before each server start: strict stops the run on a finding, warn logs it, off skips them.'),
  telemetry: z
    .strictObject({
      enabled: z.boolean().default(true).describe('Sample at all.'),
      interval: durationSchema.default(1000).describe('Sampling and scraping period.'),
      serverMetrics: z.boolean().default(true).describe("Scrape the server's Prometheus endpoint."),
    })
    .default({ enabled: true, interval: 1000, serverMetrics: true })
    .describe('GPU/host sampling and server /metrics scraping during each trial.'),
  maxFailedFraction: z
    .number()
    .min(0)
    .max(1)
    .default(DEFAULT_MAX_FAILED_FRACTION)
    .describe('A trial counts only when at most this fraction of its requests failed (and its server stayed up).'),
  trialRetries: z.number().int().min(0).max(10).default(2).describe('Times an invalid trial is measured again, in place, before the run stops.'),
  variants: z
    .record(
      z.string().regex(VARIANT_NAME, VARIANT_NAME_RULE),
      variantSchema.nullable().transform((v) => v ?? {}),
    )
    .default({})
    .meta({
      description: 'Named variants: args, env and client settings over the base server and client (see how they combine).',
      examples: [{ baseline: {}, 'chunked-prefill': { args: ['--enable-chunked-prefill'] } }],
    }),
  grid: z.array(gridSchema).default([]).describe('Variants from every combination of parameter values (on top of any `variants:`).'),
  search: searchSchema
    .optional()
    .describe(
      'A space of server settings searched for the best config per workload (load level): each valid point becomes a variant; a strategy measures the points that decide something, in blocks (see the search section).',
    ),
  schedule: z
    .enum(['interleaved', 'blocked', 'auto'])
    .default('interleaved')
    .describe(
      'interleaved: one block per repetition, each visiting every server config once; blocked: few blocks (`passes`), each starting every server config once for several trials; auto: by startup/trial cost.',
    ),
  passes: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe('How many blocks a blocked schedule has (views count them as blocks 1…N); default 2: one forward, one reversed, so slow drift cancels.'),
  budget: budgetSchema
    .optional()
    .describe('Limits the predicted plan must fit (unchecked while its wall time cannot be predicted); `run` refuses a plan over them unless --force.'),
  cost: z
    .strictObject({
      gpuHourUsd: z.number().positive().describe('Price of one GPU hour in USD.'),
      gpus: z.number().int().min(1).optional().describe('GPUs a server holds; default budget.gpusPerServer, else 1.'),
    })
    .optional()
    .describe('GPU price, for $ per million output tokens (usdPerMillionTokens).'),
  maxRestarts: z.number().int().min(0).optional().describe('Server restarts a plan may need at most.'),
  stopping: z
    .enum(['fixed', 'race'])
    .default('fixed')
    .describe('fixed: every planned trial; race: drop configs significantly worse than the best after each block.'),
  objective: objectiveSchema.optional().describe('The best config: a metric to maximize or minimize, subject to constraints.'),
  quality: z
    .strictObject({
      /**
       * Greedy answers of every variant compared with the baseline's: the same prompts (from the baseline's client
       * prompt source) sent once per server start, untimed, before its trials (src/experiment/run/equivalence.ts).
       */
      equivalence: z
        .strictObject({
          prompts: z
            .number()
            .int()
            .min(1)
            .max(1000)
            .default(16)
            .describe("Prompts answered greedily by every variant, taken from the baseline's client.prompts source."),
          outputTokens: z.number().int().min(1).max(32768).default(128).describe('Most tokens of each answer (the model may stop sooner).'),
        })
        .optional()
        .describe(
          "Greedy answers of every variant compared with the baseline's, untimed, once per server start (one at a time and batched): equivalent within the baseline's A/A floor, numerics-level divergence, outputs changed, or inconclusive (see docs/experiments.md).",
        ),
      accuracy: accuracySchema
        .optional()
        .describe(
          "A sample set answered greedily by every variant, untimed, once per server start, and scored: accuracy per variant vs the baseline's (see docs).",
        ),
    })
    .optional()
    .describe('Checks that a faster config did not change the answers (equivalence) or get fewer of them right (accuracy).'),
});

export type ExperimentFile = z.output<typeof experimentFileSchema>;
export type VariantSpec = z.output<typeof variantSchema>;
export type GridSpec = z.output<typeof gridSchema>;
export type ClientOverrides = z.output<typeof clientOverridesSchema>;
