import { writeFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { BACKEND_KINDS } from '../../load/backends.js';
import { MIN_P99_REQUESTS } from '../../load/capacity.js';
import { DATASET_FORMATS } from '../../load/datasets/types.js';
import { watchLiveness } from '../../load/liveness.js';
import { writeOutputsFile } from '../../load/outputs-file.js';
import { runBenchmark } from '../../load/run.js';
import { TRACE_FORMATS } from '../../load/trace/types.js';
import { ARRIVAL_PROCESSES, type BenchOptions, type BenchResult, type ClientOptions } from '../../load/types.js';
import { formatBenchTable } from '../../metrics/table.js';
import {
  DEFAULT_CAPACITY_STEPS,
  DEFAULT_INPUT_TOKENS,
  DEFAULT_LOAD_WORKERS,
  DEFAULT_MAX_FAILED_FRACTION,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_PREFIX_TOKENS,
  DEFAULT_PROMPT_SEED,
  DEFAULT_QUESTION_TOKENS,
  DEFAULT_QUESTIONS_PER_PREFIX,
  DEFAULT_REQUEST_TIMEOUT,
  DEFAULT_SYNTHETIC_OUTPUT_TOKENS,
  DEFAULT_WARMUP_PER_WORKLOAD,
  DEFAULT_WARMUP_REQUESTS,
  MAX_REQUEST_TOKENS,
} from '../../util/defaults.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { terminalText } from '../../util/terminal-text.js';
import { verdictOf } from '../bench-verdict.js';
import { progressRenderer } from '../progress.js';
import { type BenchFlags, clientOptionsFromFlags, DEFAULT_SINGLE_STREAM_REQUESTS, FIELD_KEYS, usageError } from './bench-options.js';

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
  else process.stdout.write(terminalText(formatBenchTable(result)));
  const verdict = verdictOf(result, controller.signal.aborted ? undefined : liveness.cause(), options);
  if (verdict.message) process.stderr.write(terminalText(`servelab: ${verdict.message}\n`));
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
    .option('--requests <n>', 'requests per level (default: 4 x concurrency, at least 32; rate: 10 s worth; trace: all in its window)')
    .option('--rate <r>', 'open loop: r requests per second')
    .option(
      '--capacity <axis:min..max>',
      'SLO capacity search: the highest rate (rate:0.5..32) or concurrency (concurrency:1..64) whose p99s meet --capacity-slo, by bisection',
    )
    .option('--capacity-slo <list>', 'p99 limits of --capacity, e.g. ttft-p99=500ms,tpot-p99=50ms,e2e-p99=2s')
    .option('--steps <n>', `bisection steps of --capacity (default ${DEFAULT_CAPACITY_STEPS}); --requests is per step (default ${MIN_P99_REQUESTS})`)
    .addOption(new Option('--arrival <kind>', 'arrival process of --rate (default poisson)').choices(ARRIVAL_PROCESSES))
    .option(
      '--burstiness <b>',
      'gamma arrivals (implies --arrival gamma): gap CV = 1/sqrt(b); 1 = Poisson, below 1 bursts, above 1 more regular (as vLLM bench serve)',
    )
    .option(
      '--max-in-flight <n>',
      `cap on requests in flight with --rate, --capacity rate:… or a trace replay (later arrivals wait; default ${DEFAULT_MAX_IN_FLIGHT})`,
    )
    .option('--sessions <n>', 'multi-turn sessions in flight (with --turns; requests count turns, default 2 x sessions x turns)')
    .option('--turns <n>', "multi-turn sessions of n turns: each turn sends the conversation so far with the server's own answers")
    .option('--think-time <d>', 'wait before each next turn of --turns: a duration (1s) or exponential:MEAN (exponential:2s)')
    .option('--shared-prefixes <n>', 'n shared prefixes (documents) each asked --questions-per-prefix questions, sent round-robin')
    .option('--prefix-len <n>', `tokens of each shared prefix (default ${DEFAULT_PREFIX_TOKENS})`)
    .option('--questions-per-prefix <n>', `requests sharing each prefix (default ${DEFAULT_QUESTIONS_PER_PREFIX})`)
    .option('--question-len <n>', `tokens of the question after the prefix (default ${DEFAULT_QUESTION_TOKENS})`)
    .option('--input-len <len>', 'synthetic prompt tokens: N, normal:MEAN,SD[,MIN,MAX] or uniform:MIN,MAX', String(DEFAULT_INPUT_TOKENS))
    .option('--output-len <len>', 'synthetic output tokens (same forms)', String(DEFAULT_SYNTHETIC_OUTPUT_TOKENS))
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
    .option('--max-output-len <n>', 'cap on output tokens of dataset or trace prompts')
    .option(
      '--trace <file>',
      'replay a production trace: its lengths and (with no --single-stream/--concurrency/--rate/--capacity) its arrival times; Mooncake hash blocks become shared prefixes (not with --turns/--shared-prefixes)',
    )
    .addOption(new Option('--trace-format <format>', 'trace format (default: mooncake for .jsonl)').choices([...TRACE_FORMATS]))
    .option(
      '--trace-speedup <x>',
      "replay the trace's arrivals x times faster than recorded (0.5: twice as slow; default 1); only when the trace sets the arrivals",
    )
    .option('--trace-window <start,end>', 'replay only this stretch of trace time from its first request, e.g. 10m,15m (END may be left out)')
    .option('--trace-start <duration>', 'replay from this far into the trace (with --trace-duration: instead of --trace-window)')
    .option('--trace-duration <duration>', 'replay this much trace time (from --trace-start, default 0)')
    .option('--seed <n>', 'seed of synthetic prompts, dataset order and random arrivals', String(DEFAULT_PROMPT_SEED))
    .option('--prompt-salt <n>', 'open every prompt with words derived from N, so no prefix-cache hit carries over from runs with another salt')
    .option('--no-keep-alive', 'send every request on a new connection (for a server that closes one after each streamed response: llama-server)')
    .option('--no-cache-prompt', "send llama.cpp's cache_prompt: false, so no request reuses a cached prompt")
    .option('--warmup <n>', 'warm-up requests before measuring (excluded from results)', String(DEFAULT_WARMUP_REQUESTS))
    .option('--warmup-seconds <duration>', 'warm-up rounds until this long has passed (e.g. 10s); replaces --warmup N (even --warmup 0)')
    .option(
      '--warmup-per-level',
      "warm each level up at its own concurrency or rate, a request per slot at least (a server's new batch sizes are slow at first)",
      DEFAULT_WARMUP_PER_WORKLOAD,
    )
    .option('--no-warmup-per-level', 'one warm-up before the first level, at most as many in flight as it')
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
      `fraction of a level's requests that may fail (or be resent); beyond it the level stops at once and is exit 1 (default ${DEFAULT_MAX_FAILED_FRACTION})`,
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
    .option(
      '--context-tokens <n>',
      `the model's context in tokens: a --trace or --dataset request that cannot fit (prompt + output) is refused before any is sent (default: a cap of ${MAX_REQUEST_TOKENS})`,
    )
    .option('--workers <n|auto>', 'load-generation threads, each with its own event loop and connections (auto = one per core)', String(DEFAULT_LOAD_WORKERS))
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
which to trust. With --rate or a trace replay, TTFT and E2E count from each request's scheduled arrival (client
queueing included); the from-send figures are in the JSON. Requests that stop short of their length despite
ignore_eos are exit 1.
Quantiles use linear interpolation (numpy's default). Ctrl-C stops and prints what was measured (exit 130).
Exit status: 0 ok, 1 a level is not a valid measurement (failures or resends beyond --max-failed-fraction, early
stop, disagreeing token counts, no output) or bad input, 2 usage error, 4 the server died or stopped answering
during the run (stopped at once), 130 interrupted.

Examples:
  servelab bench http://127.0.0.1:8000 --single-stream 8 --output-len 256
  servelab bench http://127.0.0.1:8000 --concurrency 1,4,16,64 --requests 128 --out sweep.json
  servelab bench http://127.0.0.1:8000 --rate 8 --arrival poisson --max-in-flight 64 --slo-ttft-ms 500
  servelab bench http://127.0.0.1:8000 --rate 8 --arrival gamma --burstiness 0.25 --requests 400
  servelab bench http://127.0.0.1:30000 --backend sglang --dataset sharegpt.json --max-output-len 512
  servelab bench http://127.0.0.1:8000 --trace mooncake_trace.jsonl --trace-speedup 2 --trace-window 0,10m
  servelab bench http://127.0.0.1:8000 --capacity rate:0.5..32 --capacity-slo ttft-p99=500ms,tpot-p99=50ms --steps 6`,
    );
}
