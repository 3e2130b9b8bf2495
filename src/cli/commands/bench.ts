import { writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import type { z } from 'zod';
import { describeIssues } from '../../config/issues.js';
import { BACKEND_KINDS } from '../../load/backends.js';
import { LIMITS, parseDurationMs, parseLengthSpec, promptSourceSchema, sloSchema, workloadSchema } from '../../load/config.js';
import { DATASET_FORMATS, type DatasetFields, type DatasetFormat } from '../../load/datasets/types.js';
import { watchLiveness } from '../../load/liveness.js';
import { writeOutputsFile } from '../../load/outputs-file.js';
import { runBenchmark } from '../../load/run.js';
import type { BenchOptions, BenchResult, ClientOptions, PromptSource, Slo, TokenCountSource, Workload } from '../../load/types.js';
import { formatBenchTable } from '../../metrics/table.js';
import type { BackendKind } from '../../profiles/types.js';
import { DEFAULT_MAX_IN_FLIGHT, DEFAULT_REQUEST_TIMEOUT } from '../../util/defaults.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { verdictOf } from '../bench-verdict.js';
import { progressRenderer } from '../progress.js';

interface BenchFlags {
  backend: BackendKind;
  model?: string;
  singleStream?: string;
  concurrency?: string;
  requests?: string;
  rate?: string;
  arrival: 'poisson' | 'constant';
  maxInFlight: string;
  inputLen: string;
  outputLen: string;
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
  json?: boolean;
  out?: string;
  progress: boolean;
  allowFailures?: boolean;
  collectOutputs?: boolean;
  saveOutputs?: string;
}

function promptSaltFlag(text: string): number {
  const salt = Number(text);
  if (!Number.isInteger(salt)) throw usageError(`--prompt-salt must be an integer, got "${text}"`, 'e.g. --prompt-salt 7');
  return salt;
}

const DEFAULT_SINGLE_STREAM_REQUESTS = 8;

function usageError(message: string, hint: string): UserError {
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
export function workloadFromFlags(flags: Pick<BenchFlags, 'singleStream' | 'concurrency' | 'requests' | 'rate' | 'arrival' | 'maxInFlight'>): Workload {
  const chosen = [flags.singleStream, flags.concurrency, flags.rate].filter((value) => value !== undefined).length;
  if (chosen > 1) throw usageError('--single-stream, --concurrency and --rate are alternatives', 'pick one workload per run');
  if (flags.rate !== undefined) {
    // Its bounds are the file's (load/config.ts), checked when the workload goes through the schema.
    const requestsPerSecond = positiveNumber('--rate', flags.rate);
    const requests = flags.requests ? positiveInt('--requests', flags.requests) : Math.max(32, Math.ceil(requestsPerSecond * 10));
    return { kind: 'rate', requestsPerSecond, arrival: flags.arrival, maxInFlight: positiveInt('--max-in-flight', flags.maxInFlight), requests };
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

const FIELD_KEYS: ReadonlyArray<keyof DatasetFields> = ['prompt', 'output', 'outputTokens', 'category', 'conversations'];

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

function promptsFromFlags(flags: BenchFlags): PromptSource {
  const seed = Number(flags.seed);
  if (!Number.isInteger(seed)) throw usageError(`--seed must be an integer, got "${flags.seed}"`, 'e.g. --seed 1');
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
  maxInFlight: '--max-in-flight',
  inputTokens: '--input-len',
  outputTokens: '--output-len',
  maxOutputTokens: '--max-output-len',
  seed: '--seed',
  path: '--dataset',
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
  if (flags.maxFailedFraction === undefined) return 0;
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

/** What `servelab bench ARGV` would run, without running it: the inverse of exec/remote-bench.ts benchArgv. */
export function parseBenchArgv(argv: readonly string[]): { url: string; options: ClientOptions; requestTimeoutSetting: string } {
  const program = new Command().exitOverride();
  let parsed: ReturnType<typeof parseBenchArgv> | undefined;
  defineBench(program).action((url: string, flags: BenchFlags) => {
    parsed = { url, options: clientOptionsFromFlags(flags), requestTimeoutSetting: flags.requestTimeoutName };
  });
  program.parse([...argv], { from: 'user' });
  if (!parsed) throw usageError(`not a servelab bench command line: ${argv.join(' ')}`, 'start it with "bench URL"');
  return parsed;
}

async function bench(url: string, flags: BenchFlags): Promise<void> {
  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(ExitCode.interrupted);
    process.stderr.write('\nservelab: stopping; writing what was measured (Ctrl-C again to quit at once)\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  const progress = progressRenderer(flags.progress);
  // A server that dies mid-run stops the benchmark at once: nothing more is fired into it. The model list, not
  // /health: any answer proves life, and SGLang's /health generates a token, 1 s at least, beyond the probe's timeout.
  const liveness = watchLiveness({ baseUrl: url, path: '/v1/models' });
  const options: BenchOptions = {
    ...clientOptionsFromFlags(flags),
    baseUrl: url,
    requestTimeoutSetting: flags.requestTimeoutName,
    signal: AbortSignal.any([controller.signal, liveness.signal]),
    verifyServer: liveness.verify,
    onProgress: (update) => progress.update(update),
  };
  let result: BenchResult;
  try {
    result = await runBenchmark(options);
  } finally {
    liveness.stop();
    progress.flush();
    process.off('SIGINT', onSigint);
  }
  if (flags.saveOutputs !== undefined) writeOutputsFile(flags.saveOutputs, result.outputs ?? []);
  if (!flags.collectOutputs) delete result.outputs;
  const json = `${JSON.stringify(result, null, 2)}\n`;
  if (flags.out) {
    try {
      writeFileSync(flags.out, json);
    } catch (error) {
      process.stdout.write(json);
      throw new UserError(`cannot write ${flags.out}: ${messageOf(error)}`, 'the result was printed to stdout instead; pick a writable --out path');
    }
  }
  if (flags.json) process.stdout.write(json);
  else process.stdout.write(formatBenchTable(result));
  const verdict = verdictOf(result, controller.signal.aborted ? undefined : liveness.cause(), options);
  if (verdict.message) process.stderr.write(`servelab: ${verdict.message}\n`);
  process.exitCode = verdict.code;
}

export function registerBench(program: Command): void {
  defineBench(program).action((url: string, flags: BenchFlags) => bench(url, flags));
}

/** The bench command's arguments and flags, on `program` (the CLI's, or a bare one that only parses). */
function defineBench(program: Command): Command {
  return program
    .command('bench')
    .description('Drive a running inference server with a workload and report TTFT, ITL, TPOT, latency, throughput, goodput and spec-decoding acceptance')
    .argument('<url>', 'server base URL, e.g. http://127.0.0.1:8000')
    .addOption(new Option('--backend <kind>', 'API to speak').choices(BACKEND_KINDS).default('openai-completions'))
    .option('--model <name>', 'model name sent with requests (OpenAI backends: default = first of /v1/models)')
    .option('--single-stream <n>', `one request at a time, n requests: the single-stream decode tok/s (default workload, n=${DEFAULT_SINGLE_STREAM_REQUESTS})`)
    .option('--concurrency <list>', 'fixed concurrency; a comma list (1,4,16) sweeps the levels')
    .option('--requests <n>', 'requests per level (default: 4 x concurrency, at least 32; rate: 10 s worth)')
    .option('--rate <r>', 'open loop: r requests per second')
    .addOption(new Option('--arrival <kind>', 'arrival process of --rate').choices(['poisson', 'constant']).default('poisson'))
    .option('--max-in-flight <n>', 'cap on requests in flight with --rate (later arrivals wait)', String(DEFAULT_MAX_IN_FLIGHT))
    .option('--input-len <len>', 'synthetic prompt tokens: N, normal:MEAN,SD[,MIN,MAX] or uniform:MIN,MAX', '512')
    .option('--output-len <len>', 'synthetic output tokens (same forms)', '128')
    .option(
      '--dataset <file>',
      'prompts from a ShareGPT JSON (every reply a multi-turn request), JSONL, CSV or Parquet file (records {prompt, max_tokens?, output?, category?})',
    )
    .addOption(
      new Option('--dataset-format <format>', 'dataset format (default: from the extension .jsonl/.csv/.parquet, else sharegpt)').choices([...DATASET_FORMATS]),
    )
    .option(
      '--dataset-field <key=name>',
      `record field holding KEY (${FIELD_KEYS.join(', ')}); repeatable`,
      (value: string, previous: string[]) => [...previous, value],
      [] as string[],
    )
    .addOption(
      new Option('--dataset-order <order>', 'request order (default: shuffled by --seed for ShareGPT, file order otherwise)').choices(['shuffled', 'file']),
    )
    .option('--max-output-len <n>', 'cap on output tokens of dataset prompts')
    .option('--seed <n>', 'seed of synthetic prompts, dataset order and Poisson arrivals', '0')
    .option('--prompt-salt <n>', 'open every prompt with words derived from N, so no prefix-cache hit carries over from runs with another salt')
    .option('--no-cache-prompt', "send llama.cpp's cache_prompt: false, so no request reuses a cached prompt")
    .option('--warmup <n>', 'warm-up requests before measuring (excluded from results)', '2')
    .option('--no-ignore-eos', 'let the model stop at EOS (default: ignore_eos so output lengths are exact)')
    .option('--no-require-full-output', 'accept requests that stop short of their output length despite ignore_eos (default: such a level is invalid, exit 1)')
    .addOption(
      new Option(
        '--token-counts <source>',
        'output-token count to trust when server usage, stream events and --tokenizer disagree (default: a disagreement is exit 1)',
      ).choices(['usage', 'stream', 'tokenizer']),
    )
    .option(
      '--max-failed-fraction <f>',
      "fraction of a level's requests that may fail (or be resent); beyond it the level stops at once and is exit 1 (default 0)",
    )
    .option('--request-timeout <duration>', 'fail a request that receives nothing for this long (stall)', DEFAULT_REQUEST_TIMEOUT)
    .addOption(new Option('--request-timeout-name <name>', 'how timeout messages name the request timeout').default('--request-timeout').hideHelp())
    .option('--slo-ttft-ms <ms>', 'goodput SLO on time to first token')
    .option('--slo-tpot-ms <ms>', 'goodput SLO on time per output token')
    .option('--slo-e2e-ms <ms>', 'goodput SLO on end-to-end latency')
    .option(
      '--tokenizer <path>',
      "the model's tokenizer.json, model directory or NAME-<encoding>.tiktoken vocabulary: exact synthetic lengths, chat template, token counts when the server reports no usage",
    )
    .option('--workers <n|auto>', 'load-generation threads, each with its own event loop and connections (auto = one per core)', '1')
    .option('--no-spec-metrics', 'do not scrape speculative-decoding statistics')
    .option('--json', 'print the result JSON on stdout instead of the table')
    .option('--collect-outputs', "keep each measured request's answer (text, token ids, finish reason) in the result JSON's outputs")
    .option(
      '--save-outputs <file>',
      'write each measured answer as JSON Lines (for servelab compare-outputs); asks for token ids where the API has a field for it',
    )
    .option('--out <file>', 'also write the result JSON to this file')
    .option('--no-progress', 'no progress bar on stderr')
    .option('--allow-failures', 'exit 0 even when requests failed, and keep sending (--max-failed-fraction 1)')
    .addHelpText(
      'after',
      `
Timing: TTFT is the first chunk carrying output text; ITL the gaps between such chunks (a chunk carrying several
tokens, as speculative decoding sends, counts once); TPOT = (e2e - TTFT) / (output tokens - 1). Token counts come
from server-reported usage, else --tokenizer, else counted stream chunks (the method is shown); usage is checked
against the stream's events and the tokenizer's count, and a disagreement is exit 1 unless --token-counts says
which to trust. With --rate, TTFT and E2E count from each request's scheduled arrival (client queueing included);
the from-send figures are in the JSON. Requests that stop short of their length despite ignore_eos are exit 1.
Quantiles use linear interpolation (numpy's default). Ctrl-C stops and prints what was measured (exit 130).
Exit status: 0 ok, 1 a level is not a valid measurement (failures or resends beyond --max-failed-fraction, early
stop, disagreeing token counts, no output) or bad input, 2 usage error, 4 the server died or stopped answering
during the run (stopped at once), 130 interrupted.

Examples:
  servelab bench http://127.0.0.1:8000 --single-stream 8 --output-len 256
  servelab bench http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests 128 --out sweep.json
  servelab bench http://127.0.0.1:8000 --rate 8 --arrival poisson --max-in-flight 64 --slo-ttft-ms 500
  servelab bench http://127.0.0.1:30000 --backend sglang --dataset sharegpt.json --max-output-len 512`,
    );
}
