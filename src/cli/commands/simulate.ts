import { availableParallelism } from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { isSimulatorReplica, runSimulatorReplica, startSimulatorCluster } from '../../simulate/cluster.js';
import {
  type EngineKind,
  EngineKinds,
  type EnvSpeedup,
  type FailureKind,
  FailureKinds,
  type FaultConfig,
  FaultKinds,
  resolveSimConfig,
  type SimConfig,
  type SimConfigInput,
} from '../../simulate/config.js';
import { startSimulator } from '../../simulate/server.js';
import { UserError } from '../../util/errors.js';

interface SimulateFlags {
  config?: string;
  engine?: EngineKind;
  incrementalStreamingOutput?: boolean;
  perRequestSpecDecodeMetrics?: boolean;
  healthCheckTimeoutMs?: number;
  printConfig?: boolean;
  host?: string;
  port?: number;
  model?: string;
  loadMs?: number;
  fail?: FailureKind;
  failAtMs?: number;
  failAfterRequests?: number;
  ttftMs?: number;
  prefillMsPerToken?: number;
  tpotMs?: number;
  concurrencySlowdown?: number;
  maxBatch?: number;
  newBatchMs?: number;
  jitter?: number;
  seed?: number;
  driftPctPerMin?: number;
  driftSince?: number;
  eosProbability?: number;
  defaultMaxTokens?: number;
  maxModelLen?: number;
  specDraftTokens?: number;
  specAcceptance?: number;
  specDraftOverhead?: number;
  specAcceptanceDecay?: number;
  specDraftStepCost?: number;
  specVerifyBatchCost?: number;
  speculativeAlgorithm?: string;
  speculativeNumSteps?: number;
  speculativeEagleTopk?: number;
  speculativeNumDraftTokens?: number;
  tpSize?: number;
  statsIntervalMs?: number;
  closeKeptAlive?: boolean;
  prefixCache?: boolean;
  lossy?: number;
  divergenceAfter?: number;
  batchVariance?: number;
  answerKey?: string;
  envSpeedup: EnvSpeedup[];
  fault: FaultConfig[];
  workers?: number;
}

function number(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed)) throw new InvalidArgumentError('expected a number');
  return parsed;
}

function integer(value: string): number {
  const parsed = number(value);
  if (!Number.isInteger(parsed)) throw new InvalidArgumentError('expected an integer');
  return parsed;
}

/** N or `auto` (one per CPU core). */
function workerCount(value: string): number {
  if (value === 'auto') return availableParallelism();
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new InvalidArgumentError('expected a positive integer or auto');
  return parsed;
}

/** NAME=VALUE:FACTOR, e.g. NCCL_PROTO=LL:1.15 */
function envSpeedup(value: string, previous: EnvSpeedup[]): EnvSpeedup[] {
  const match = /^([^=]+)=(.*):([^:]+)$/.exec(value);
  const factor = match ? Number(match[3]) : NaN;
  if (!match || !(factor > 0)) throw new InvalidArgumentError('expected NAME=VALUE:FACTOR, e.g. NCCL_PROTO=LL:1.15');
  return [...previous, { name: match[1]!, value: match[2]!, factor }];
}

/** KIND:RATE[:AFTER_TOKENS], e.g. stall:0.1:20 */
function fault(value: string, previous: FaultConfig[]): FaultConfig[] {
  const [kind, rate, after] = value.split(':');
  if (!FaultKinds.includes(kind as FaultConfig['kind'])) throw new InvalidArgumentError(`kind must be one of ${FaultKinds.join(', ')}`);
  const parsedRate = Number(rate);
  const parsedAfter = after === undefined ? 0 : Number(after);
  if (!(parsedRate >= 0 && parsedRate <= 1)) throw new InvalidArgumentError('rate must be a number from 0 to 1');
  if (!Number.isInteger(parsedAfter) || parsedAfter < 0) throw new InvalidArgumentError('AFTER_TOKENS must be a non-negative integer');
  return [...previous, { kind: kind as FaultConfig['kind'], rate: parsedRate, afterTokens: parsedAfter }];
}

/** Config key path → the flag that sets it, so validation errors name what the user typed. */
const FLAG_OF_KEY: Record<string, string> = {
  engine: '--engine',
  'sglang.incrementalStreamingOutput': '--incremental-streaming-output',
  'vllm.perRequestSpecDecodeMetrics': '--per-request-spec-decode-metrics',
  'sglang.healthCheckTimeoutMs': '--health-check-timeout-ms',
  host: '--host',
  port: '--port',
  model: '--model',
  'startup.loadMs': '--load-ms',
  'startup.failure.kind': '--fail',
  'startup.failure.atMs': '--fail-at-ms',
  'startup.failure.afterRequests': '--fail-after-requests',
  'decode.ttftBaseMs': '--ttft-ms',
  'decode.prefillMsPerToken': '--prefill-ms-per-token',
  'decode.tpotMs': '--tpot-ms',
  'decode.concurrencySlowdown': '--concurrency-slowdown',
  'decode.maxBatch': '--max-batch',
  'decode.newBatchMs': '--new-batch-ms',
  'decode.jitter': '--jitter',
  'decode.seed': '--seed',
  'decode.drift.pctPerMin': '--drift-pct-per-min',
  'decode.drift.sinceEpochMs': '--drift-since',
  'decode.eosProbability': '--eos-probability',
  'decode.defaultMaxTokens': '--default-max-tokens',
  'decode.maxModelLen': '--max-model-len',
  'decode.spec.draftTokens': '--spec-draft-tokens',
  'decode.spec.acceptance': '--spec-acceptance',
  'decode.spec.draftOverhead': '--spec-draft-overhead',
  'decode.spec.acceptanceDecay': '--spec-acceptance-decay',
  'decode.spec.draftStepCost': '--spec-draft-step-cost',
  'decode.spec.verifyBatchCost': '--spec-verify-batch-cost',
  'decode.spec.steps': '--speculative-num-steps',
  'decode.spec.topk': '--speculative-eagle-topk',
  'sglang.tpSize': '--tp-size',
  'sglang.speculativeAlgorithm': '--speculative-algorithm',
  statsIntervalMs: '--stats-interval-ms',
  closeKeptAlive: '--close-kept-alive',
  'prefixCache.enabled': '--prefix-cache',
  'output.lossy': '--lossy',
  'output.divergenceAfter': '--divergence-after',
  'output.batchVariance': '--batch-variance',
  'output.answerKey': '--answer-key',
};

function flagOf(keyPath: string): string {
  if (keyPath.startsWith('envSpeedups')) return '--env-speedup';
  if (keyPath.startsWith('faults')) return '--fault';
  return FLAG_OF_KEY[keyPath] ?? keyPath;
}

/** Only flags the user gave, so a --config file's values survive where no flag overrides them. */
function overridesFrom(flags: SimulateFlags): SimConfigInput {
  return {
    engine: flags.engine,
    vllm: { perRequestSpecDecodeMetrics: flags.perRequestSpecDecodeMetrics },
    sglang: {
      incrementalStreamingOutput: flags.incrementalStreamingOutput,
      healthCheckTimeoutMs: flags.healthCheckTimeoutMs,
      tpSize: flags.tpSize,
      speculativeAlgorithm: flags.speculativeAlgorithm,
    },
    host: flags.host,
    port: flags.port,
    model: flags.model,
    startup: { loadMs: flags.loadMs, failure: { kind: flags.fail, atMs: flags.failAtMs, afterRequests: flags.failAfterRequests } },
    decode: {
      ttftBaseMs: flags.ttftMs,
      prefillMsPerToken: flags.prefillMsPerToken,
      tpotMs: flags.tpotMs,
      concurrencySlowdown: flags.concurrencySlowdown,
      maxBatch: flags.maxBatch,
      newBatchMs: flags.newBatchMs,
      jitter: flags.jitter,
      seed: flags.seed,
      drift: { pctPerMin: flags.driftPctPerMin, sinceEpochMs: flags.driftSince },
      eosProbability: flags.eosProbability,
      defaultMaxTokens: flags.defaultMaxTokens,
      maxModelLen: flags.maxModelLen,
      spec: {
        // SGLang's speculative_num_draft_tokens counts the tree's root (the last verified token): drafts = n - 1.
        draftTokens: flags.speculativeNumDraftTokens === undefined ? flags.specDraftTokens : Math.max(0, flags.speculativeNumDraftTokens - 1),
        acceptance: flags.specAcceptance,
        draftOverhead: flags.specDraftOverhead,
        acceptanceDecay: flags.specAcceptanceDecay,
        draftStepCost: flags.specDraftStepCost,
        verifyBatchCost: flags.specVerifyBatchCost,
        steps: flags.speculativeNumSteps,
        topk: flags.speculativeEagleTopk,
      },
    },
    statsIntervalMs: flags.statsIntervalMs,
    closeKeptAlive: flags.closeKeptAlive,
    prefixCache: { enabled: flags.prefixCache },
    output: { lossy: flags.lossy, divergenceAfter: flags.divergenceAfter, batchVariance: flags.batchVariance, answerKey: flags.answerKey },
    envSpeedups: flags.envSpeedup.length > 0 ? flags.envSpeedup : undefined,
    faults: flags.fault.length > 0 ? flags.fault : undefined,
  };
}

export function registerSimulate(program: Command): void {
  defineSimulate(program).action(async (flags: SimulateFlags) => {
    if (isSimulatorReplica()) return runSimulatorReplica();
    await simulate(flags);
  });
}

/**
 * The simulator's config from a `simulate …` argument list, as the command would resolve it; undefined when the
 * arguments do not parse (the plan then has no declared figures, and the run will say what is wrong).
 */
export function simConfigOfArgv(argv: readonly string[]): SimConfig | undefined {
  const program = new Command().exitOverride().configureOutput({ writeOut: () => {}, writeErr: () => {} });
  let config: SimConfig | undefined;
  defineSimulate(program).action((flags: SimulateFlags) => {
    config = resolveSimConfig(flags.config, overridesFrom(flags), flagOf);
  });
  try {
    program.parse(['simulate', ...argv], { from: 'user' });
  } catch {
    return undefined;
  }
  return config;
}

/** The simulate command's flags, on `program` (the CLI's, or a bare one that only parses). */
function defineSimulate(program: Command): Command {
  return program
    .command('simulate')
    .description('Run the built-in simulated LLM server (OpenAI, SGLang, TGI and llama.cpp APIs) in the foreground')
    .option('--config <file>', 'YAML/JSON simulator config; flags override its values')
    .option('--print-config', 'print the effective config as JSON and exit')
    .addOption(
      new Option(
        '--engine <name>',
        "whose behaviour to copy: vllm/sglang refuse connections while loading and answer /health, cache resets, /metrics and log lines as those engines do (default: servelab's own)",
      ).choices(EngineKinds),
    )
    .option('--incremental-streaming-output', "sglang: native /generate chunks carry only the new text, as SGLang's flag of that name")
    .option(
      '--per-request-spec-decode-metrics',
      "vllm: responses carry metrics.speculative_decoding (the stream's final usage chunk), as vLLM's flag of that name (summary)",
    )
    .option(
      '--health-check-timeout-ms <ms>',
      'sglang: how long /health waits for scheduler output before a 503 (SGLANG_HEALTH_CHECK_TIMEOUT, default 20000)',
      number,
    )
    .option('--host <host>', 'address to bind (default 127.0.0.1)')
    .option('--port <port>', 'port to bind; 0 picks a free one (default 0)', integer)
    .option('--model <name>', 'served model name (default sim-llama-8b)')
    .option('--load-ms <ms>', 'startup time until ready (default 1500)', number)
    .addOption(new Option('--fail <kind>', 'startup failure to simulate').choices(FailureKinds))
    .option('--fail-at-ms <ms>', 'when the failure strikes (default loadMs/2; beyond loadMs = after ready)', number)
    .option('--fail-after-requests <n>', 'hang only: strike when the Nth generation request arrives (it and all later ones hang)', integer)
    .option('--ttft-ms <ms>', 'prefill base time (default 20)', number)
    .option('--prefill-ms-per-token <ms>', 'prefill time per prompt token (default 0.05)', number)
    .option('--tpot-ms <ms>', 'time per decode step for one request (default 10; 0 = as fast as possible)', number)
    .option('--concurrency-slowdown <fraction>', 'step slowdown per extra running request (default 0.02)', number)
    .option('--max-batch <n>', 'running requests at most; the rest queue FIFO (default 256)', integer)
    .option('--new-batch-ms <ms>', 'extra time per new size of the first step at a batch larger than any since start, batch-wide (default 0)', number)
    .option('--jitter <fraction>', 'coefficient of variation of every delay (default 0.05)', number)
    .option('--seed <n>', 'random seed (default 1)', integer)
    .option('--drift-pct-per-min <pct>', 'slow machine drift: decode steps take this % longer per minute (default 0)', number)
    .option('--drift-since <epoch-ms>', 'wall-clock origin of the drift, shared by restarts (default: process start)', number)
    .option('--eos-probability <p>', 'per-token EOS chance for requests without ignore_eos (default 0)', number)
    .option('--default-max-tokens <n>', 'max_tokens when a request gives none (default 16)', integer)
    .option('--max-model-len <n>', 'context length; longer requests get a 400 (default 32768)', integer)
    .option('--spec-draft-tokens <k>', 'speculative decoding draft length; 0 = off (default 0)', integer)
    .option('--spec-acceptance <p>', 'per-draft-token acceptance probability (default 0.7)', number)
    .option('--spec-draft-overhead <fraction>', 'verification step cost per draft token, fraction of tpot (default 0.1)', number)
    .option('--spec-acceptance-decay <f>', 'acceptance at draft depth i is --spec-acceptance x f^i (default 1)', number)
    .option('--spec-draft-step-cost <fraction>', 'cost of one draft-model step, fraction of tpot; --env-speedup leaves it alone (default 0)', number)
    .option(
      '--spec-verify-batch-cost <fraction>',
      'extra verify cost per draft token per running request, fraction of tpot: deep drafts stop paying at high concurrency (default 0)',
      number,
    )
    .option('--speculative-algorithm <name>', "sglang: as SGLang's flag (EAGLE, EAGLE3, NEXTN…); only logged")
    .option('--speculative-num-steps <n>', "sglang: draft-model steps per verify (the draft tree's depth), as SGLang's flag", integer)
    .option('--speculative-eagle-topk <n>', "sglang: candidates per draft step, as SGLang's flag; 1 makes draft tokens = steps + 1 (default 1)", integer)
    .option('--speculative-num-draft-tokens <n>', "sglang: tokens verified per step, the tree's root included, as SGLang's flag", integer)
    .option('--tp-size <n>', 'sglang: tensor-parallel ranks, each logging its load lines (TP0…); no effect on timing (default 1)', integer)
    .option('--stats-interval-ms <ms>', 'log vLLM-style throughput lines this often while busy; 0 = never (default 10000)', number)
    .option('--close-kept-alive', 'close each connection after a streamed response while advertising keep-alive, like llama-server')
    .option('--prefix-cache', 'cache prompt prefixes: a repeated prefix costs no prefill (POST /reset_prefix_cache or /flush_cache clears it)')
    .option('--lossy <share>', 'replace this share of greedy (temperature 0) output tokens with other tokens, the same ones every run (default 0)', number)
    .option('--divergence-after <n>', 'greedy outputs equal the reference for n tokens, then differ (default: never)', integer)
    .option(
      '--batch-variance <p>',
      'a greedy answer that shared the batch with other requests departs, with probability p per prompt, from the unbatched one in its second half, as GPU batching does (default 0)',
      number,
    )
    .option(
      '--answer-key <file>',
      'JSONL of {"prompt", "answer"}: a greedy request for one of those prompts answers with its answer, then stops (with --lossy, that share of answers wrong)',
    )
    .option('--env-speedup <NAME=VALUE:FACTOR>', 'decode speed x FACTOR when env NAME equals VALUE (repeatable)', envSpeedup, [])
    .option('--fault <KIND:RATE[:AFTER_TOKENS]>', `inject client-visible faults: ${FaultKinds.join('|')} (repeatable)`, fault, [])
    .option(
      '--workers <n|auto>',
      'simulator processes behind the one port, each a data-parallel replica with its own --max-batch; /metrics sums them (default 1)',
      workerCount,
    );
}

async function simulate(flags: SimulateFlags): Promise<void> {
  const config = resolveSimConfig(flags.config, overridesFrom(flags), flagOf);
  if (flags.printConfig) {
    process.stdout.write(`${JSON.stringify(config, null, 2)}\n`);
    return;
  }
  const log = (line: string): void => void process.stdout.write(`${line}\n`);
  // A real engine crash ends the process; flush the traceback first.
  const onCrash = (): void => void process.stdout.write('', () => process.exit(1));
  const workers = flags.workers ?? 1;
  if (workers > 1 && (config.engine === 'vllm' || config.engine === 'sglang')) {
    throw new UserError(`--engine ${config.engine} cannot be combined with --workers`, 'drop one of the two flags', 2);
  }
  if (workers > 1 && config.prefixCache.enabled) {
    throw new UserError('--prefix-cache cannot be combined with --workers: each worker would cache only the prompts it served', 'drop one of the two flags', 2);
  }
  const simulator = workers > 1 ? await startSimulatorCluster(config, workers, { log, onCrash }) : await startSimulator(config, { log, onCrash });
  const shutdown = (signal: NodeJS.Signals): void => {
    log(`INFO:     Shutting down (${signal})`);
    void simulator.close().then(() => {
      log('INFO:     Finished server process');
      process.exit(0);
    });
  };
  process.once('SIGTERM', shutdown);
  process.once('SIGINT', shutdown);
}
