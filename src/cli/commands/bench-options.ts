import type { z } from 'zod';
import { describeIssues } from '../../config/issues.js';
import { LIMITS, parseDurationMs, parseLengthSpec, promptSourceSchema, sloSchema, workloadSchema } from '../../load/config.js';
import type { DatasetFields, DatasetFormat } from '../../load/datasets/types.js';
import { parseThinkTime } from '../../load/sessions.js';
import type { ArrivalProcess, ClientOptions, PromptSource, Slo, TokenCountSource, Workload } from '../../load/types.js';
import type { BackendKind } from '../../profiles/types.js';
import {
  DEFAULT_MAX_FAILED_FRACTION,
  DEFAULT_PREFIX_TOKENS,
  DEFAULT_QUESTION_TOKENS,
  DEFAULT_QUESTIONS_PER_PREFIX,
  DEFAULT_THINK_TIME,
} from '../../util/defaults.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';

/**
 * `servelab bench` flags into ClientOptions: the flag parsers read the text, the experiment file's own schemas
 * (load/config.ts) have the last word on the values, so bench accepts exactly what a file accepts.
 */

export interface BenchFlags {
  backend: BackendKind;
  model?: string;
  singleStream?: string;
  concurrency?: string;
  requests?: string;
  rate?: string;
  arrival?: ArrivalProcess;
  burstiness?: string;
  maxInFlight: string;
  inputLen: string;
  outputLen: string;
  turns?: string;
  sessions?: string;
  thinkTime?: string;
  sharedPrefixes?: string;
  prefixLen?: string;
  questionsPerPrefix?: string;
  questionLen?: string;
  dataset?: string;
  datasetFormat?: DatasetFormat;
  datasetField: string[];
  datasetOrder?: 'shuffled' | 'file';
  maxOutputLen?: string;
  seed: string;
  promptSalt?: string;
  cachePrompt: boolean;
  warmup: string;
  ignoreEos: boolean;
  requireFullOutput: boolean;
  tokenCounts?: TokenCountSource;
  maxFailedFraction?: string;
  requestTimeout: string;
  requestTimeoutName: string;
  sloTtftMs?: string;
  sloTpotMs?: string;
  sloE2eMs?: string;
  tokenizer?: string;
  workers: string;
  specMetrics: boolean;
  collectOutputs?: boolean;
  saveOutputs?: string;
  json?: boolean;
  out?: string;
  progress: boolean;
  allowFailures?: boolean;
}

function promptSaltFlag(text: string): number {
  const salt = Number(text);
  if (!Number.isInteger(salt)) throw usageError(`--prompt-salt must be an integer, got "${text}"`, 'e.g. --prompt-salt 7');
  return salt;
}

export const DEFAULT_SINGLE_STREAM_REQUESTS = 8;

export function usageError(message: string, hint: string): UserError {
  return new UserError(message, hint, ExitCode.usage);
}

function positiveInt(flag: string, text: string, max: number = LIMITS.count): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw usageError(`${flag} must be a positive integer, got "${text}"`, `e.g. ${flag} 8`);
  if (value > max) throw usageError(`${flag} must be at most ${max}, got "${text}"`, `e.g. ${flag} 8`);
  return value;
}

function positiveNumber(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw usageError(`${flag} must be a positive number, got "${text}"`, `e.g. ${flag} 4`);
  return value;
}

function lengthFlag(flag: string, text: string) {
  try {
    return parseLengthSpec(text);
  } catch (error) {
    throw usageError(`${flag}: ${messageOf(error)}`, `e.g. ${flag} 512 or ${flag} normal:512,64`);
  }
}

/** Workload from the mutually exclusive --single-stream / --concurrency / --rate flags. */
export function workloadFromFlags(
  flags: Pick<BenchFlags, 'singleStream' | 'concurrency' | 'requests' | 'rate' | 'arrival' | 'burstiness' | 'maxInFlight' | 'sessions' | 'turns'>,
): Workload {
  const chosen = [flags.singleStream, flags.concurrency, flags.rate, flags.sessions].filter((value) => value !== undefined).length;
  if (chosen > 1) throw usageError('--single-stream, --concurrency, --rate and --sessions are alternatives', 'pick one workload per run');
  if (flags.sessions !== undefined) {
    if (flags.turns === undefined) throw usageError('--sessions N runs multi-turn sessions: it needs --turns', 'e.g. --sessions 8 --turns 4');
    // Sessions in flight are the closed loop's concurrency; requests are turns (by default two sessions per slot).
    const sessions = positiveInt('--sessions', flags.sessions);
    const requests = flags.requests ? positiveInt('--requests', flags.requests) : 2 * sessions * positiveInt('--turns', flags.turns);
    return { kind: 'concurrency', concurrency: sessions, requests };
  }
  if ((flags.arrival !== undefined || flags.burstiness !== undefined) && flags.rate === undefined) {
    throw usageError('--arrival and --burstiness shape the arrivals of --rate', 'add --rate R, or leave them out');
  }
  if (flags.rate !== undefined) {
    // Its bounds are the file's (load/config.ts), checked when the workload goes through the schema.
    const requestsPerSecond = positiveNumber('--rate', flags.rate);
    const requests = flags.requests ? positiveInt('--requests', flags.requests) : Math.max(32, Math.ceil(requestsPerSecond * 10));
    // --burstiness alone means gamma arrivals, as in vLLM's bench serve; a wrong pairing is the schema's to word.
    const burstiness = flags.burstiness !== undefined ? positiveNumber('--burstiness', flags.burstiness) : undefined;
    const arrival = flags.arrival ?? (burstiness !== undefined ? 'gamma' : 'poisson');
    const maxInFlight = positiveInt('--max-in-flight', flags.maxInFlight);
    return { kind: 'rate', requestsPerSecond, arrival, ...(burstiness !== undefined && { burstiness }), maxInFlight, requests };
  }
  if (flags.concurrency !== undefined) {
    const concurrencies = flags.concurrency.split(',').map((part) => positiveInt('--concurrency', part.trim()));
    const requests = flags.requests ? positiveInt('--requests', flags.requests) : Math.max(32, 4 * Math.max(...concurrencies));
    return concurrencies.length === 1
      ? { kind: 'concurrency', concurrency: concurrencies[0]!, requests }
      : { kind: 'sweep', concurrencies, requestsPerLevel: requests };
  }
  const requests = flags.singleStream ?? flags.requests;
  return { kind: 'single-stream', requests: requests ? positiveInt('--single-stream', requests) : DEFAULT_SINGLE_STREAM_REQUESTS };
}

export const FIELD_KEYS: ReadonlyArray<keyof DatasetFields> = ['prompt', 'output', 'outputTokens', 'category', 'conversations'];

/** `--dataset-field prompt=question --dataset-field category=topic` into a field mapping. */
function datasetFieldsFromFlags(pairs: readonly string[]): DatasetFields {
  const fields: DatasetFields = {};
  for (const pair of pairs) {
    const [key, name] = pair.split('=', 2) as [string, string | undefined];
    if (!FIELD_KEYS.includes(key as keyof DatasetFields) || !name) {
      throw usageError(`--dataset-field must be KEY=NAME with KEY one of ${FIELD_KEYS.join(', ')}, got "${pair}"`, 'e.g. --dataset-field prompt=question');
    }
    fields[key as keyof DatasetFields] = name;
  }
  return fields;
}

/** --turns (sessions) or --shared-prefixes: the shaped prompt sources; undefined when neither is asked for. */
function shapedPromptsFromFlags(flags: BenchFlags, seed: number): PromptSource | undefined {
  if (flags.thinkTime !== undefined && flags.turns === undefined)
    throw usageError('--think-time is the wait between turns of --turns', 'add --turns T, or leave it out');
  const prefixFlags = [flags.prefixLen, flags.questionsPerPrefix, flags.questionLen].some((value) => value !== undefined);
  if (prefixFlags && flags.sharedPrefixes === undefined) {
    throw usageError('--prefix-len, --questions-per-prefix and --question-len shape --shared-prefixes', 'add --shared-prefixes N, or leave them out');
  }
  if (flags.turns !== undefined && flags.sharedPrefixes !== undefined)
    throw usageError('--turns and --shared-prefixes are alternatives', 'pick one prompt shape per run');
  const outputTokens = lengthFlag('--output-len', flags.outputLen);
  if (flags.turns !== undefined) {
    if (flags.dataset !== undefined && (flags.datasetFormat ?? 'sharegpt') !== 'sharegpt') {
      throw usageError('sessions read the human turns of a ShareGPT file', 'give a ShareGPT --dataset, or generated turns (no --dataset)');
    }
    return {
      kind: 'sessions',
      turns: positiveInt('--turns', flags.turns),
      inputTokens: lengthFlag('--input-len', flags.inputLen),
      outputTokens,
      thinkTime: parseThinkTime(flags.thinkTime ?? DEFAULT_THINK_TIME),
      ...(flags.dataset !== undefined && { path: flags.dataset }),
      seed,
    };
  }
  if (flags.sharedPrefixes === undefined) return undefined;
  if (flags.dataset !== undefined) throw usageError('--shared-prefixes generates its prompts', 'leave out --dataset');
  return {
    kind: 'shared-prefix',
    prefixes: positiveInt('--shared-prefixes', flags.sharedPrefixes),
    prefixTokens: positiveInt('--prefix-len', flags.prefixLen ?? String(DEFAULT_PREFIX_TOKENS), LIMITS.tokens),
    questionsPerPrefix: positiveInt('--questions-per-prefix', flags.questionsPerPrefix ?? String(DEFAULT_QUESTIONS_PER_PREFIX)),
    questionTokens: positiveInt('--question-len', flags.questionLen ?? String(DEFAULT_QUESTION_TOKENS), LIMITS.tokens),
    outputTokens,
    seed,
  };
}

function promptsFromFlags(flags: BenchFlags): PromptSource {
  const seed = Number(flags.seed);
  if (!Number.isInteger(seed)) throw usageError(`--seed must be an integer, got "${flags.seed}"`, 'e.g. --seed 1');
  const shaped = shapedPromptsFromFlags(flags, seed);
  if (shaped) return shaped;
  const maxOutputTokens = flags.maxOutputLen ? positiveInt('--max-output-len', flags.maxOutputLen, LIMITS.tokens) : undefined;
  if (flags.dataset) {
    const extension = /\.(jsonl|csv|parquet)$/i.exec(flags.dataset)?.[1]?.toLowerCase() as DatasetFormat | undefined;
    const source: PromptSource = { kind: flags.datasetFormat ?? extension ?? 'sharegpt', path: flags.dataset, seed };
    if (maxOutputTokens !== undefined) source.maxOutputTokens = maxOutputTokens;
    if (flags.datasetOrder) source.shuffle = flags.datasetOrder === 'shuffled';
    if (flags.datasetField.length > 0) source.fields = datasetFieldsFromFlags(flags.datasetField);
    return source;
  }
  return { kind: 'synthetic', inputTokens: lengthFlag('--input-len', flags.inputLen), outputTokens: lengthFlag('--output-len', flags.outputLen), seed };
}

function sloFromFlags(flags: BenchFlags): Slo | undefined {
  const slo: Slo = {};
  if (flags.sloTtftMs) slo.ttftMs = positiveNumber('--slo-ttft-ms', flags.sloTtftMs);
  if (flags.sloTpotMs) slo.tpotMs = positiveNumber('--slo-tpot-ms', flags.sloTpotMs);
  if (flags.sloE2eMs) slo.e2eMs = positiveNumber('--slo-e2e-ms', flags.sloE2eMs);
  return Object.keys(slo).length > 0 ? validatedAsInFile(sloSchema, slo) : undefined;
}

/** The flag that sets each field of the workload, prompts and SLO objects. */
const FLAG_OF: Record<string, string> = {
  requests: '--requests',
  requestsPerLevel: '--requests',
  concurrency: '--concurrency',
  concurrencies: '--concurrency',
  requestsPerSecond: '--rate',
  burstiness: '--burstiness',
  maxInFlight: '--max-in-flight',
  inputTokens: '--input-len',
  outputTokens: '--output-len',
  maxOutputTokens: '--max-output-len',
  seed: '--seed',
  path: '--dataset',
  turns: '--turns',
  thinkTime: '--think-time',
  prefixes: '--shared-prefixes',
  prefixTokens: '--prefix-len',
  questionsPerPrefix: '--questions-per-prefix',
  questionTokens: '--question-len',
  fields: '--dataset-field',
  ttftMs: '--slo-ttft-ms',
  tpotMs: '--slo-tpot-ms',
  e2eMs: '--slo-e2e-ms',
};

/**
 * The flags' value through the experiment file's own schema (load/config.ts), so `bench` accepts exactly what a
 * `workloads:` entry accepts: the flag parsers above read the text, the schema has the last word on the value.
 */
function validatedAsInFile<T>(schema: z.ZodType<T>, value: T): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problem = describeIssues(schema, value, result.error.issues);
  const flag = FLAG_OF[String(problem.path[0])] ?? 'flags';
  throw usageError(`${flag}: ${problem.message}`, 'see `servelab bench --help` for the accepted values');
}

function maxFailedFractionFromFlags(flags: Pick<BenchFlags, 'allowFailures' | 'maxFailedFraction'>): number {
  if (flags.allowFailures && flags.maxFailedFraction !== undefined)
    throw usageError('--allow-failures and --max-failed-fraction are alternatives', '--allow-failures is --max-failed-fraction 1');
  if (flags.allowFailures) return 1;
  if (flags.maxFailedFraction === undefined) return DEFAULT_MAX_FAILED_FRACTION;
  const fraction = Number(flags.maxFailedFraction);
  if (!(fraction >= 0 && fraction <= 1))
    throw usageError(`--max-failed-fraction must be between 0 and 1, got "${flags.maxFailedFraction}"`, 'e.g. --max-failed-fraction 0.05');
  return fraction;
}

/** The client options the flags say: the same typed object an experiment's client section resolves into. */
export function clientOptionsFromFlags(flags: BenchFlags): ClientOptions {
  return {
    backend: flags.backend,
    ...(flags.model !== undefined && { model: flags.model }),
    workload: validatedAsInFile(workloadSchema, workloadFromFlags(flags)),
    prompts: validatedAsInFile(promptSourceSchema, promptsFromFlags(flags)),
    ...(flags.promptSalt !== undefined && { promptSalt: promptSaltFlag(flags.promptSalt) }),
    ...(!flags.cachePrompt && { cachePrompt: false as const }),
    warmupRequests: flags.warmup === '0' ? 0 : positiveInt('--warmup', flags.warmup),
    ignoreEos: flags.ignoreEos,
    requireFullOutput: flags.requireFullOutput,
    ...(flags.tokenCounts !== undefined && { tokenCounts: flags.tokenCounts }),
    maxFailedFraction: maxFailedFractionFromFlags(flags),
    requestTimeoutMs: parseDurationMs(flags.requestTimeout),
    ...(flags.sloTtftMs || flags.sloTpotMs || flags.sloE2eMs ? { slo: sloFromFlags(flags) } : {}),
    ...(flags.tokenizer !== undefined && { tokenizerPath: flags.tokenizer }),
    specMetrics: flags.specMetrics ? 'auto' : 'none',
    workers: flags.workers === 'auto' ? 'auto' : positiveInt('--workers', flags.workers),
    ...((flags.collectOutputs || flags.saveOutputs !== undefined) && { collectOutputs: true }),
  };
}
