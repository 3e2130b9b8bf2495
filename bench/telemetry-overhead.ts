/**
 * Does recording the machine change what is measured? Client output tok/s with the per-trial recorder (GPU/host
 * sampler + /metrics scraper, as `servelab run` uses it) and without it, in alternating rounds of the same run, so
 * drift of the machine hits both sides alike. Prints the median of each and their ratio (goal: within 1%).
 *
 *   npx tsc -p . && node dist/bench/telemetry-overhead.js [--url http://127.0.0.1:8000 --backend openai-completions]
 *       [--rounds 6] [--requests 64] [--concurrency 16] [--output-len 128] [--interval-ms 1000] [--fake-nvidia-smi]
 *
 * Without --url a simulator is started in its own process. Without nvidia-smi on the PATH the sampler records the
 * host only (the figure then covers the host probes alone). --fake-nvidia-smi puts a FAKE nvidia-smi first on the
 * PATH that replays a row captured on an H200: it measures the sampler's cost on this host's CPU, NOT the cost of
 * querying a real GPU driver; the output says so. Run without it on a GPU machine for the real figure.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { median } from 'simple-statistics';
import { LocalExecutor } from '../src/exec/local.js';
import { runBenchmark } from '../src/load/run.js';
import type { BackendKind } from '../src/profiles/types.js';
import { type SimulatorProcess, spawnSimulator } from '../src/simulate/child.js';
import { startTrialRecorder } from '../src/telemetry/trial.js';

const { values: args } = parseArgs({
  options: {
    url: { type: 'string' },
    backend: { type: 'string', default: 'openai-completions' },
    rounds: { type: 'string', default: '6' },
    requests: { type: 'string', default: '256' },
    concurrency: { type: 'string', default: '16' },
    'output-len': { type: 'string', default: '128' },
    'interval-ms': { type: 'string', default: '1000' },
    'fake-nvidia-smi': { type: 'boolean', default: false },
  },
});
const ROUNDS = Number(args.rounds);
const INTERVAL_MS = Number(args['interval-ms']);

const simulators: SimulatorProcess[] = [];
process.on('exit', () => simulators.forEach((sim) => sim.child.kill('SIGKILL')));

/** A simulator in its own process: a fixed 2 ms per token for every stream, so tok/s is steady between rounds. */
async function startSim(): Promise<string> {
  const flags = ['--load-ms', '0', '--ttft-ms', '2', '--prefill-ms-per-token', '0', '--tpot-ms', '2', '--jitter', '0', '--concurrency-slowdown', '0'];
  const sim = await spawnSimulator([...flags, '--max-batch', '4096']);
  simulators.push(sim);
  await sim.waitForLine(/Uvicorn running on/, 60_000);
  return sim.url;
}

/** A FAKE nvidia-smi: answers the sampler's queries with one row captured on an H200 (see test/fixtures/nvidia-smi). */
function installFakeNvidiaSmi(): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-fake-nvidia-smi-'));
  const row = '0, 1515, 3201, 1980, 689.83, 700.00, 58, 100, 31731, 143771, 0x0000000000000004';
  // The -lms stream asks for a timestamp first and repeats every interval until killed.
  const script = [
    '#!/bin/sh',
    'case "$1" in',
    `  --query-gpu=timestamp,*) while :; do echo "$(date '+%Y/%m/%d %H:%M:%S.000'), ${row}"; sleep ${INTERVAL_MS / 1000}; done ;;`,
    `  --query-gpu=*) echo "${row}" ;;`,
    'esac',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'nvidia-smi'), script);
  chmodSync(join(dir, 'nvidia-smi'), 0o755);
  process.env.PATH = `${dir}:${process.env.PATH ?? ''}`;
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function round(baseUrl: string, withTelemetry: boolean): Promise<{ tokensPerSecond: number; gpuSamples: number; note?: string }> {
  const executor = new LocalExecutor();
  const recorder = withTelemetry ? startTrialRecorder(executor, baseUrl, { enabled: true, intervalMs: INTERVAL_MS, serverMetrics: true }) : undefined;
  const result = await runBenchmark({
    baseUrl,
    backend: args.backend as BackendKind,
    workload: { kind: 'concurrency', concurrency: Number(args.concurrency), requests: Number(args.requests) },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 32 }, outputTokens: { kind: 'fixed', value: Number(args['output-len']) }, seed: 1 },
    warmupRequests: 2,
    ignoreEos: true,
    requestTimeoutMs: 60_000,
    specMetrics: 'none',
  });
  const telemetry = await recorder?.stop();
  const level = result.levels[0]!;
  const note = telemetry?.summary.gpuUnavailable;
  return { tokensPerSecond: level.outputTokensPerSecond, gpuSamples: telemetry?.series.gpu.length ?? 0, ...(note !== undefined && { note }) };
}

if (args['fake-nvidia-smi']) {
  installFakeNvidiaSmi();
  console.log('NOTE: FAKE nvidia-smi (replays a captured H200 row): this measures the sampler on this CPU, not a real GPU driver.');
}
const baseUrl = args.url ?? (await startSim());
console.log(`target ${baseUrl}${args.url ? '' : ' (simulator, own process)'}; ${ROUNDS} rounds each, alternating; sampling every ${INTERVAL_MS} ms`);
const without: number[] = [];
const withRecorder: number[] = [];
let gpuSamples = 0;
let note: string | undefined;
for (let i = 0; i < ROUNDS; i++) {
  // Alternate which side goes first so a trend over the run does not favour one.
  const order = i % 2 === 0 ? [false, true] : [true, false];
  for (const telemetry of order) {
    const figures = await round(baseUrl, telemetry);
    (telemetry ? withRecorder : without).push(figures.tokensPerSecond);
    if (telemetry) {
      gpuSamples += figures.gpuSamples;
      note ??= figures.note;
    }
  }
}
const base = median(without);
const measured = median(withRecorder);
console.log(`without telemetry: median ${base.toFixed(1)} tok/s  [${without.map((v) => v.toFixed(0)).join(', ')}]`);
console.log(`with telemetry:    median ${measured.toFixed(1)} tok/s  [${withRecorder.map((v) => v.toFixed(0)).join(', ')}]`);
console.log(`GPU samples recorded: ${gpuSamples}${note ? ` (GPU telemetry: ${note})` : ''}`);
console.log(`ratio with/without: ${(measured / base).toFixed(4)} (${(((measured - base) / base) * 100).toFixed(2)}%; goal: within ±1%)`);
