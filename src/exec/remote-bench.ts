import { capacitySloSpec } from '../load/capacity.js';
import { thinkTimeText } from '../load/sessions.js';
import type { BenchResult, ClientOptions, LengthDistribution, PromptSource, Workload } from '../load/types.js';

/** `servelab bench` spelling of a length distribution (see parseLengthSpec). */
export function lengthSpec(distribution: LengthDistribution): string {
  switch (distribution.kind) {
    case 'fixed':
      return String(distribution.value);
    case 'uniform':
      return `uniform:${distribution.min},${distribution.max}`;
    case 'normal': {
      if (distribution.min === undefined && distribution.max === undefined) return `normal:${distribution.mean},${distribution.stddev}`;
      // The flag takes both bounds or none; 10 standard deviations is unbounded in practice.
      const max = distribution.max ?? Math.ceil(distribution.mean + 10 * distribution.stddev);
      return `normal:${distribution.mean},${distribution.stddev},${distribution.min ?? 1},${max}`;
    }
  }
}

function workloadArgs(workload: Workload): string[] {
  switch (workload.kind) {
    case 'single-stream':
      return ['--single-stream', String(workload.requests)];
    case 'concurrency':
      return ['--concurrency', String(workload.concurrency), '--requests', String(workload.requests)];
    case 'sweep':
      return ['--concurrency', workload.concurrencies.join(','), '--requests', String(workload.requestsPerLevel)];
    case 'rate':
      return [
        '--rate',
        String(workload.requestsPerSecond),
        '--arrival',
        workload.arrival,
        ...(workload.burstiness !== undefined ? ['--burstiness', String(workload.burstiness)] : []),
        '--max-in-flight',
        String(workload.maxInFlight),
        '--requests',
        String(workload.requests),
      ];
    case 'trace':
      // With --trace and no other workload flag, bench replays the trace's arrivals (see promptArgs).
      return ['--max-in-flight', String(workload.maxInFlight), ...(workload.requests !== undefined ? ['--requests', String(workload.requests)] : [])];
    case 'capacity':
      return [
        '--capacity',
        `${workload.over}:${workload.min}..${workload.max}`,
        '--capacity-slo',
        capacitySloSpec(workload.slo),
        '--steps',
        String(workload.steps),
        '--requests',
        String(workload.requestsPerStep),
        ...(workload.arrival !== undefined ? ['--arrival', workload.arrival] : []),
        ...(workload.burstiness !== undefined ? ['--burstiness', String(workload.burstiness)] : []),
        ...(workload.maxInFlight !== undefined ? ['--max-in-flight', String(workload.maxInFlight)] : []),
      ];
  }
}

function promptArgs(prompts: PromptSource): string[] {
  switch (prompts.kind) {
    case 'synthetic':
      return ['--input-len', lengthSpec(prompts.inputTokens), '--output-len', lengthSpec(prompts.outputTokens), '--seed', String(prompts.seed)];
    case 'trace':
      return [
        '--trace',
        prompts.path,
        '--trace-format',
        prompts.format,
        ...(prompts.speedup !== undefined ? ['--trace-speedup', String(prompts.speedup)] : []),
        ...(prompts.window ? ['--trace-window', `${prompts.window.startMs}ms,${prompts.window.endMs !== undefined ? `${prompts.window.endMs}ms` : ''}`] : []),
        ...(prompts.maxOutputTokens !== undefined ? ['--max-output-len', String(prompts.maxOutputTokens)] : []),
        '--seed',
        String(prompts.seed ?? 0),
      ];
    case 'sessions':
      return [
        '--turns',
        String(prompts.turns),
        '--think-time',
        thinkTimeText(prompts.thinkTime),
        '--input-len',
        lengthSpec(prompts.inputTokens),
        '--output-len',
        lengthSpec(prompts.outputTokens),
        ...(prompts.path !== undefined ? ['--dataset', prompts.path] : []),
        '--seed',
        String(prompts.seed),
      ];
    case 'shared-prefix':
      return [
        '--shared-prefixes',
        String(prompts.prefixes),
        '--prefix-len',
        String(prompts.prefixTokens),
        '--questions-per-prefix',
        String(prompts.questionsPerPrefix),
        '--question-len',
        String(prompts.questionTokens),
        '--output-len',
        lengthSpec(prompts.outputTokens),
        '--seed',
        String(prompts.seed),
      ];
    default:
      return [
        '--dataset',
        prompts.path,
        '--dataset-format',
        prompts.kind,
        ...(prompts.maxOutputTokens !== undefined ? ['--max-output-len', String(prompts.maxOutputTokens)] : []),
        ...(prompts.shuffle !== undefined ? ['--dataset-order', prompts.shuffle ? 'shuffled' : 'file'] : []),
        ...Object.entries(prompts.fields ?? {}).flatMap(([key, name]) => ['--dataset-field', `${key}=${name}`]),
        '--seed',
        String(prompts.seed ?? 0),
      ];
  }
}

/**
 * Arguments of `servelab bench` that reproduce `options` against `baseUrl` on another machine, writing the result
 * JSON to `outPath`; `servelab bench` parses them back into the same object (cli/commands/bench.ts
 * parseBenchArgv; test/load-faults-cli.test.ts checks the round trip). Dataset and tokenizer paths are passed as they
 * are: they must exist on that machine. No maxFailedFraction: never stop a level (bench's own default stops at once).
 */
export function benchArgv(options: ClientOptions & { requestTimeoutSetting?: string }, baseUrl: string, outPath: string): string[] {
  return [
    'bench',
    baseUrl,
    '--backend',
    options.backend,
    ...(options.model ? ['--model', options.model] : []),
    ...workloadArgs(options.workload),
    ...promptArgs(options.prompts),
    ...(options.promptSalt !== undefined ? ['--prompt-salt', String(options.promptSalt)] : []),
    ...(options.cachePrompt === false ? ['--no-cache-prompt'] : []),
    ...(options.keepAlive === false ? ['--no-keep-alive'] : []),
    '--warmup',
    String(options.warmupRequests),
    ...(options.warmupMs !== undefined ? ['--warmup-seconds', `${Math.max(1, Math.round(options.warmupMs))}ms`] : []),
    options.warmupPerLevel ? '--warmup-per-level' : '--no-warmup-per-level',
    ...(options.ignoreEos ? [] : ['--no-ignore-eos']),
    ...(options.requireFullOutput === false ? ['--no-require-full-output'] : []),
    ...(options.tokenCounts !== undefined ? ['--token-counts', options.tokenCounts] : []),
    '--max-failed-fraction',
    String(options.maxFailedFraction ?? 1),
    '--request-timeout',
    `${Math.max(1, Math.round(options.requestTimeoutMs))}ms`,
    ...(options.requestTimeoutSetting !== undefined ? ['--request-timeout-name', options.requestTimeoutSetting] : []),
    ...(options.slo?.ttftMs !== undefined ? ['--slo-ttft-ms', String(options.slo.ttftMs)] : []),
    ...(options.slo?.tpotMs !== undefined ? ['--slo-tpot-ms', String(options.slo.tpotMs)] : []),
    ...(options.slo?.e2eMs !== undefined ? ['--slo-e2e-ms', String(options.slo.e2eMs)] : []),
    ...(options.tokenizerPath ? ['--tokenizer', options.tokenizerPath] : []),
    ...(options.contextTokens !== undefined ? ['--context-tokens', String(options.contextTokens)] : []),
    ...(options.workers !== undefined ? ['--workers', String(options.workers)] : []),
    ...(options.specMetrics === 'none' ? ['--no-spec-metrics'] : []),
    ...(options.collectOutputs ? ['--collect-outputs'] : []),
    '--json',
    '--no-progress',
    '--out',
    outPath,
  ];
}

/** Validate the JSON `servelab bench --out` wrote; undefined when it is not a BenchResult of this schema. */
export function parseBenchResult(text: string): BenchResult | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const result = value as Partial<BenchResult> | null;
  if (result?.schemaVersion !== 1 || !Array.isArray(result.levels) || typeof result.interrupted !== 'boolean') return undefined;
  return result as BenchResult;
}

/** The URL the load client on the host must use: the server's own port there, not our local forward. */
export function remoteBaseUrl(localBaseUrl: string, remote: { host: string; port: number }): string {
  const url = new URL(localBaseUrl);
  const host = remote.host.includes(':') ? `[${remote.host}]` : remote.host;
  return `http://${host}:${remote.port}${url.pathname.replace(/\/+$/, '')}`;
}
