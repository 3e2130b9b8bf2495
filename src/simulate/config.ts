import { z } from 'zod';
import { formatKeyPath, loadConfigFile } from '../config/load.js';
import { UserError } from '../util/errors.js';

/** One startup phase (the default personality's log; the engine personalities log their engine's lines): `start` is logged when it begins, `end` (with `{s}` = seconds it took) when it finishes. */
const PhaseSchema = z.strictObject({
  start: z.string().min(1),
  end: z.string().min(1).optional(),
  /** Relative share of `startup.loadMs` spent in this phase. */
  share: z.number().positive(),
});

export const FailureKinds = ['none', 'crash', 'oom', 'hang', 'not-serving'] as const;
export type FailureKind = (typeof FailureKinds)[number];

export const DEFAULT_PHASES: ReadonlyArray<z.input<typeof PhaseSchema>> = [
  { start: 'Starting to load model {model}...', share: 0.05 },
  { start: 'Loading model weights ...', end: 'Loading weights took 1.20 GB / {s} s', share: 0.5 },
  { start: 'Memory profiling ...', end: '# GPU blocks: 27648, # CPU blocks: 2048 (profiling took {s} s)', share: 0.15 },
  { start: 'Capturing CUDA graphs ...', end: 'Graph capturing finished in {s} secs', share: 0.3 },
];

const StartupSchema = z.strictObject({
  /** Total time from process start to ready, spread over the phases by share. */
  loadMs: z.number().min(0).default(1500),
  phases: z
    .array(PhaseSchema)
    .min(1)
    .default(() => DEFAULT_PHASES.map((phase) => ({ ...phase }))),
  failure: z
    .strictObject({
      kind: z.enum(FailureKinds).default('none'),
      /** When the failure strikes, ms after start; default: half-way through loading. Later than loadMs = after ready. */
      atMs: z.number().min(0).optional(),
      /**
       * `hang` only: strikes when this many generation requests have arrived (the last one hangs) instead of at a
       * time, so a test can hang a server in the middle of its measurement however long the startup took.
       */
      afterRequests: z.number().int().min(1).optional(),
    })
    .refine((failure) => failure.afterRequests === undefined || failure.kind === 'hang', {
      message: 'afterRequests works with the hang failure only',
      path: ['afterRequests'],
    })
    .prefault({}),
});

/**
 * Speculative decoding. Plain form: a chain of `draftTokens` drafts per verify step. EAGLE form (SGLang's flags):
 * `steps` draft-model steps (the tree's depth), `topk` candidates per step, `draftTokens` = SGLang's
 * speculative_num_draft_tokens - 1 (the tree's nodes, the root being the last verified token); the nodes beyond
 * the chain are alternatives at the shallowest depths, up to topk per depth (see model.ts `levelCandidates`).
 */
const SpecSchema = z.strictObject({
  /** Drafts proposed per verify step (tree nodes); 0 turns speculative decoding off. */
  draftTokens: z.number().int().min(0).max(64).default(0),
  /** Probability that each draft token is accepted, given all before it were. */
  acceptance: z.number().min(0).max(1).default(0.7),
  /** Extra verification-step cost per draft token, as a fraction of tpot. */
  draftOverhead: z.number().min(0).default(0.1),
  /** Draft-model steps (tree depth); default: draftTokens (a chain). */
  steps: z.number().int().min(1).max(64).optional(),
  /** Candidates per draft step (SGLang's --speculative-eagle-topk). */
  topk: z.number().int().min(1).max(16).default(1),
  /** Acceptance at depth i is acceptance x decay^i: a draft model guesses worse the further it looks ahead. */
  acceptanceDecay: z.number().min(0).max(1).default(1),
  /** Cost of one draft-model step, as a fraction of tpot; tuned NCCL (envSpeedups) does not speed it up. */
  draftStepCost: z.number().min(0).default(0),
  /**
   * Extra verify cost per draft token per running request, as a fraction of tpot: verifying is compute, batch ×
   * draft tokens of it, so deep drafts that pay alone stop paying at high concurrency (SGLang's AutoSpec found the
   * best steps 4 at batch 1 and 2 at batch 64 on Qwen3-235B-A22B, sgl-project/sglang#22246). 0: the verify cost
   * ignores the batch.
   */
  verifyBatchCost: z.number().min(0).default(0),
  /** Set by the simulator: the draft tokens asked for before SGLang's topk-1 rule replaced them (logged as SGLang does). */
  requestedDraftTokens: z.number().int().min(0).optional(),
});

const DecodeSchema = z.strictObject({
  ttftBaseMs: z.number().min(0).default(20),
  prefillMsPerToken: z.number().min(0).default(0.05),
  tpotMs: z.number().min(0).default(10),
  /** Each extra running request slows every step by this fraction. */
  concurrencySlowdown: z.number().min(0).default(0.02),
  /** Requests beyond this many wait in a FIFO queue. */
  maxBatch: z.number().int().min(1).default(256),
  /**
   * Extra time, per batch size, of the first decode step at a batch larger than any this server ran since start,
   * for the whole batch: kernels JIT-compiled or autotuned per shape on first use although CUDA graphs were captured
   * at startup (sgl-project/sglang#18244: Triton kernels compiled per bs, ~30-45 ms each; vllm-project/vllm#37188:
   * autotuning on the first requests after every start; triton-lang/triton#4781: first compile per grid shape), and
   * the allocator growing to the new peak. 0: every size is warm from the start.
   */
  newBatchMs: z.number().min(0).default(0),
  /** Multiplicative timing noise (≈ coefficient of variation of each delay). */
  jitter: z.number().min(0).max(2).default(0.05),
  seed: z.number().int().default(1),
  /**
   * Slow drift of the machine: every decode step takes pctPerMin % longer per minute elapsed since sinceEpochMs
   * (wall clock, so restarted servers of one campaign share it; default: this process's start). Negative = faster.
   */
  drift: z.strictObject({ pctPerMin: z.number().min(-100).default(0), sinceEpochMs: z.number().min(0).optional() }).prefault({}),
  /** Chance that a token is EOS, only for requests that do not set ignore_eos. */
  eosProbability: z.number().min(0).max(1).default(0),
  /** max_tokens when the request gives none (OpenAI's completions default). */
  defaultMaxTokens: z.number().int().min(1).default(16),
  maxModelLen: z.number().int().min(2).default(32768),
  spec: SpecSchema.prefault({}),
});

const EnvSpeedupSchema = z.strictObject({
  name: z.string().min(1),
  value: z.string(),
  /** Decode speed is multiplied by this when process.env[name] === value. */
  factor: z.number().positive(),
});

export const FaultKinds = ['http-500', 'stall', 'malformed-sse', 'disconnect'] as const;
export type FaultKind = (typeof FaultKinds)[number];

const FaultSchema = z.strictObject({
  kind: z.enum(FaultKinds),
  /** Fraction of generation requests hit by this fault (seeded). */
  rate: z.number().min(0).max(1),
  /** Tokens streamed before the fault strikes (http-500 always strikes before any). */
  afterTokens: z.number().int().min(0).default(0),
});

/**
 * Whose behaviour the server copies where engines differ (listening, /health, cache reset, /metrics, log lines):
 * `default` is servelab's own simulator; `vllm` and `sglang` follow today's engines (src/simulate/engines.ts cites
 * the engine code); `llamacpp` behaves as the default does.
 */
export const EngineKinds = ['default', 'vllm', 'sglang', 'llamacpp'] as const;
export type EngineKind = (typeof EngineKinds)[number];

export const SimConfigSchema = z.strictObject({
  engine: z.enum(EngineKinds).default('default'),
  host: z.string().min(1).default('127.0.0.1'),
  /** 0 picks a free port; the URL is printed. */
  port: z.number().int().min(0).max(65535).default(0),
  model: z.string().min(1).default('sim-llama-8b'),
  startup: StartupSchema.prefault({}),
  /** How often vLLM-style throughput lines are logged while there is traffic; 0 = never. */
  statsIntervalMs: z.number().min(0).default(10_000),
  decode: DecodeSchema.prefault({}),
  envSpeedups: z.array(EnvSpeedupSchema).default([]),
  faults: z.array(FaultSchema).default([]),
  /**
   * Like llama-server: each connection is closed right after a streamed response although the response advertised
   * keep-alive, so a client that reuses it sends into a dead socket.
   */
  closeKeptAlive: z.boolean().default(false),
  /** What only the vllm personality reads. */
  vllm: z
    .strictObject({
      /** --per-request-spec-decode-metrics summary (vllm#48915): the final usage chunk carries metrics.speculative_decoding. */
      perRequestSpecDecodeMetrics: z.boolean().default(false),
    })
    .prefault({}),
  /** What only the sglang personality reads. */
  sglang: z
    .strictObject({
      /** SGLang's --incremental-streaming-output: native /generate chunks carry only the new text. */
      incrementalStreamingOutput: z.boolean().default(false),
      /** SGLANG_HEALTH_CHECK_TIMEOUT: how long /health waits for the scheduler before answering 503. */
      healthCheckTimeoutMs: z.number().min(0).default(20_000),
      /** --tp-size: tensor-parallel ranks, each logging its load lines as TPn (one process plays them all). */
      tpSize: z.number().int().min(1).max(64).default(1),
      /** --speculative-algorithm, as logged in server_args (EAGLE3 when unset and spec is on). */
      speculativeAlgorithm: z.string().min(1).optional(),
    })
    .prefault({}),
  /** How greedy answers differ from the seed's reference answer per prompt (src/simulate/output.ts). */
  output: z
    .strictObject({
      /** Share of generated tokens replaced by another token. */
      lossy: z.number().min(0).max(1).default(0),
      /** Tokens identical to the reference before the rest of each answer differs. */
      divergenceAfter: z.number().int().min(0).optional(),
      /** Probability per prompt that a greedy answer generated in a shared batch departs from the unbatched one, in its second half. */
      batchVariance: z.number().min(0).max(1).default(0),
      /** JSONL of {prompt, answer}: greedy requests for those prompts answer with the answer (src/simulate/answer-key.ts). */
      answerKey: z.string().min(1).optional(),
    })
    .prefault({}),
  /** A prefix cache: repeated prompt prefixes skip their prefill cost (TTFT shrinks on repeats). */
  prefixCache: z
    .strictObject({
      enabled: z.boolean().default(false),
      /** Block size in prompt characters; a block hits only when everything before it matches too. */
      blockChars: z.number().int().min(1).default(64),
    })
    .prefault({}),
});

export type SimConfig = z.output<typeof SimConfigSchema>;
/** Partial config as written in a file or passed to startSimulator; defaults fill the rest. */
export type SimConfigInput = z.input<typeof SimConfigSchema>;
export type SpecConfig = SimConfig['decode']['spec'];
export type FaultConfig = SimConfig['faults'][number];
export type EnvSpeedup = SimConfig['envSpeedups'][number];

export interface ParseContext {
  /** Where the config came from, for the error message. */
  source?: string;
  /** Turns a key path into what the user typed (e.g. a CLI flag), so errors point at the right thing. */
  nameOf?: (keyPath: string) => string;
  exitCode?: number;
}

/** Validate a (partial) config object and fill in defaults; bad input is a UserError. */
export function parseSimConfig(input: unknown, context: ParseContext = {}): SimConfig {
  const result = SimConfigSchema.safeParse(input ?? {});
  if (result.success) return chainRule(result.data);
  const issue = result.error.issues[0]!;
  const name = (context.nameOf ?? ((key: string) => key))(formatKeyPath(issue.path));
  throw new UserError(`${context.source ?? 'simulator config'}: ${name}: ${issue.message}`, `fix ${name} (see servelab simulate --help)`, context.exitCode);
}

/**
 * SGLang's rule for a chain (python/sglang/srt/server_args.py, `_handle_speculative_decoding`: "speculative_num_draft_tokens
 * is adjusted to speculative_num_steps + 1 when speculative_eagle_topk == 1"): with topk 1 and steps given, the
 * drafts per verify step are the steps.
 */
function chainRule(config: SimConfig): SimConfig {
  const spec = config.decode.spec;
  if (spec.topk !== 1 || spec.steps === undefined || spec.draftTokens === spec.steps) return config;
  const adjusted = { ...spec, draftTokens: spec.steps, ...(spec.draftTokens > 0 && { requestedDraftTokens: spec.draftTokens }) };
  return { ...config, decode: { ...config.decode, spec: adjusted } };
}

/**
 * File config (if any) with flag overrides layered on top. The flags are validated on their own first, so an
 * error names the flag (usage exit code) or the file line, never a merged mystery.
 */
export function resolveSimConfig(configPath: string | undefined, overrides: SimConfigInput, flagOf: (keyPath: string) => string): SimConfig {
  parseSimConfig(overrides, { source: 'command-line flags', nameOf: flagOf, exitCode: 2 });
  const base = configPath ? loadConfigFile(configPath, SimConfigSchema) : {};
  return parseSimConfig(deepMerge(base, overrides), { source: configPath ? `${configPath} + command-line flags` : 'command-line flags' });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepMerge(base: unknown, override: unknown): unknown {
  if (!isPlainObject(base) || !isPlainObject(override)) return override === undefined ? base : override;
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) {
    if (value !== undefined) merged[key] = deepMerge(base[key], value);
  }
  return merged;
}
