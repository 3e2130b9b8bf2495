import type { z } from 'zod';
import { describeIssues } from '../../config/issues.js';
import { MIN_P99_REQUESTS, parseCapacitySlo } from '../../load/capacity.js';
import { LIMITS, parseLengthSpec, promptSourceSchema, sloSchema, workloadSchema } from '../../load/config.js';
import type { DatasetFields, DatasetFormat } from '../../load/datasets/types.js';
import { parseThinkTime } from '../../load/sessions.js';
import type { ArrivalProcess, CapacitySlo, ClientOptions, PromptSource, Slo, TokenCountSource, Workload } from '../../load/types.js';
import type { BackendKind } from '../../profiles/types.js';
import {
  DEFAULT_CAPACITY_STEPS,
  DEFAULT_MAX_FAILED_FRACTION,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_PREFIX_TOKENS,
  DEFAULT_QUESTION_TOKENS,
  DEFAULT_QUESTIONS_PER_PREFIX,
  DEFAULT_THINK_TIME,
} from '../../util/defaults.js';
import { messageOf } from '../../util/errors.js';
import { durationFlag, positiveInt, positiveNumber, usageError } from './bench-flag-values.js';
import { checkTraceFlags, type TraceFlags, traceFromFlags } from './bench-trace-options.js';

export { usageError };

/**
 * `servelab bench` flags into ClientOptions: the flag parsers read the text, the experiment file's own schemas
 * (load/config.ts) have the last word on the values, so bench accepts exactly what a file accepts.
 */

export interface BenchFlags extends TraceFlags {
  backend: BackendKind;
  model?: string;
  singleStream?: string;
  concurrency?: string;
  requests?: string;
  rate?: string;
  capacity?: string;
  capacitySlo?: string;
  steps?: string;
  arrival?: ArrivalProcess;
  burstiness?: string;
  maxInFlight?: string;
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
  keepAlive: boolean;
  warmup: string;
  warmupSeconds?: string;
  warmupPerLevel: boolean;
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
  contextTokens?: string;
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

function lengthFlag(flag: string, text: string) {
  try {
    return parseLengthSpec(text);
  } catch (error) {
    throw usageError(`${flag}: ${messageOf(error)}`, `e.g. ${flag} 512 or ${flag} normal:512,64`);
  }
}

type WorkloadFlags = Pick<
  BenchFlags,
  | 'singleStream'
  | 'concurrency'
  | 'requests'
  | 'rate'
  | 'capacity'
  | 'capacitySlo'
  | 'steps'
  | 'arrival'
  | 'burstiness'
  | 'maxInFlight'
  | 'trace'
  | 'sessions'
  | 'turns'
  | 'dataset'
>;

/**
 * Workload from the mutually exclusive --single-stream / --concurrency / --rate / --capacity / --sessions flags; with
 * --trace and none of them, the trace's own arrivals.
 */
export function workloadFromFlags(flags: WorkloadFlags): Workload {
  const workload = chosenWorkload(flags);
  // Only the open-loop workloads (rate, a rate search, trace arrivals) carry the cap: it is theirs to take.
  if (flags.maxInFlight !== undefined && !('maxInFlight' in workload)) {
    throw usageError(
      '--max-in-flight caps the arrivals of --rate, --capacity rate:… or a trace replay',
      'a closed loop (--single-stream, --concurrency, --sessions) keeps exactly its own number in flight: leave --max-in-flight out',
    );
  }
  return workload;
}

function chosenWorkload(flags: WorkloadFlags): Workload {
  const chosen = [flags.singleStream, flags.concurrency, flags.rate, flags.capacity, flags.sessions].filter((value) => value !== undefined).length;
  if (chosen > 1) throw usageError('--single-stream, --concurrency, --rate, --capacity and --sessions are alternatives', 'pick one workload per run');
  if ((flags.capacitySlo !== undefined || flags.steps !== undefined) && flags.capacity === undefined) {
    throw usageError('--capacity-slo and --steps belong to a capacity search', 'add --capacity rate:MIN..MAX (or concurrency:MIN..MAX), or leave them out');
  }
  if (flags.capacity !== undefined) return capacityFromFlags(flags, flags.capacity);
  if (flags.sessions !== undefined) {
    if (flags.turns === undefined) throw usageError('--sessions N runs multi-turn sessions: it needs --turns', 'e.g. --sessions 8 --turns 4');
    // Sessions in flight are the closed loop's concurrency; requests are turns (by default two sessions per slot).
    const sessions = positiveInt('--sessions', flags.sessions);
    const turns = positiveInt('--turns', flags.turns);
    const requests = flags.requests ? positiveInt('--requests', flags.requests) : 2 * sessions * turns;
    // Generated sessions take their turns in order: too few requests never have N sessions in flight, yet the level says c=N.
    if (flags.dataset === undefined && Math.ceil(requests / turns) < sessions)
      throw usageError(
        `--requests ${requests} makes ${Math.ceil(requests / turns)} session(s) of ${turns} turns, fewer than the ${sessions} --sessions in flight`,
        `give at least ${sessions * turns} requests (default ${2 * sessions * turns}), or fewer --sessions`,
      );
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
    const maxInFlight = maxInFlightOf(flags);
    return { kind: 'rate', requestsPerSecond, arrival, ...(burstiness !== undefined && { burstiness }), maxInFlight, requests };
  }
  if (flags.trace !== undefined && chosen === 0) {
    const maxInFlight = maxInFlightOf(flags);
    return { kind: 'trace', maxInFlight, ...(flags.requests !== undefined && { requests: positiveInt('--requests', flags.requests) }) };
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

/** --max-in-flight, or the file's default (util/defaults) when it is not given. */
function maxInFlightOf(flags: WorkloadFlags): number {
  return flags.maxInFlight === undefined ? DEFAULT_MAX_IN_FLIGHT : positiveInt('--max-in-flight', flags.maxInFlight);
}

/** `--capacity rate:0.5..32 --capacity-slo ttft-p99=500ms --steps 6 --requests 100`; bounds are the schema's to check. */
function capacityFromFlags(flags: WorkloadFlags, range: string): Workload {
  const match = /^(rate|concurrency):([0-9.]+)\.\.([0-9.]+)$/.exec(range.trim());
  if (!match) throw usageError(`--capacity must be rate:MIN..MAX or concurrency:MIN..MAX, got "${range}"`, 'e.g. --capacity rate:0.5..32');
  const over = match[1] as 'rate' | 'concurrency';
  if (flags.capacitySlo === undefined) throw usageError('--capacity needs --capacity-slo', 'e.g. --capacity-slo ttft-p99=500ms,tpot-p99=50ms');
  let slo: CapacitySlo;
  try {
    slo = parseCapacitySlo(flags.capacitySlo);
  } catch (error) {
    throw usageError(`--capacity-slo: ${messageOf(error)}`, 'e.g. --capacity-slo ttft-p99=500ms,tpot-p99=50ms');
  }
  if (over === 'concurrency' && (flags.arrival !== undefined || flags.burstiness !== undefined)) {
    throw usageError('--arrival and --burstiness shape the arrivals of a rate search', 'use --capacity rate:MIN..MAX, or leave them out');
  }
  const burstiness = flags.burstiness !== undefined ? positiveNumber('--burstiness', flags.burstiness) : undefined;
  const max = positiveNumber('--capacity', match[3]!, '--capacity rate:0.5..32');
  // A concurrency step needs at least its level's requests to reach it in flight.
  const requests = over === 'concurrency' ? Math.max(MIN_P99_REQUESTS, Math.ceil(max)) : MIN_P99_REQUESTS;
  return {
    kind: 'capacity',
    over,
    min: positiveNumber('--capacity', match[2]!, '--capacity rate:0.5..32'),
    max,
    steps: flags.steps !== undefined ? positiveInt('--steps', flags.steps) : DEFAULT_CAPACITY_STEPS,
    requestsPerStep: flags.requests ? positiveInt('--requests', flags.requests) : requests,
    slo,
    ...(over === 'rate' && {
      arrival: flags.arrival ?? (burstiness !== undefined ? 'gamma' : 'poisson'),
      ...(burstiness !== undefined && { burstiness }),
      maxInFlight: maxInFlightOf(flags),
    }),
  };
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
  checkTraceFlags(flags);
  const shaped = shapedPromptsFromFlags(flags, seed);
  if (shaped) return shaped;
  const maxOutputTokens = flags.maxOutputLen ? positiveInt('--max-output-len', flags.maxOutputLen, LIMITS.tokens) : undefined;
  if (flags.trace !== undefined) {
    if (flags.dataset !== undefined) throw usageError('--dataset and --trace are alternatives', 'pick one prompt source');
    return traceFromFlags(flags, flags.trace, seed, maxOutputTokens);
  }
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
  min: '--capacity',
  max: '--capacity',
  over: '--capacity',
  steps: '--steps',
  requestsPerStep: '--requests',
  slo: '--capacity-slo',
  arrival: '--arrival',
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
  format: '--trace-format',
  speedup: '--trace-speedup',
  window: '--trace-window',
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
  const problem = describeIssues(schema, value, result.error.issues)[0]!;
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
    ...(!flags.keepAlive && { keepAlive: false as const }),
    warmupRequests: flags.warmup === '0' ? 0 : positiveInt('--warmup', flags.warmup),
    ...(flags.warmupSeconds !== undefined && { warmupMs: durationFlag('--warmup-seconds', flags.warmupSeconds) }),
    warmupPerLevel: flags.warmupPerLevel,
    ignoreEos: flags.ignoreEos,
    requireFullOutput: flags.requireFullOutput,
    ...(flags.tokenCounts !== undefined && { tokenCounts: flags.tokenCounts }),
    maxFailedFraction: maxFailedFractionFromFlags(flags),
    requestTimeoutMs: durationFlag('--request-timeout', flags.requestTimeout),
    ...(flags.sloTtftMs || flags.sloTpotMs || flags.sloE2eMs ? { slo: sloFromFlags(flags) } : {}),
    ...(flags.tokenizer !== undefined && { tokenizerPath: flags.tokenizer }),
    ...(flags.contextTokens !== undefined && { contextTokens: positiveInt('--context-tokens', flags.contextTokens) }),
    specMetrics: flags.specMetrics ? 'auto' : 'none',
    workers: flags.workers === 'auto' ? 'auto' : positiveInt('--workers', flags.workers),
    ...((flags.collectOutputs || flags.saveOutputs !== undefined) && { collectOutputs: true }),
  };
}
