/**
 * Does recording the machine change what is measured? Client output tok/s with the per-trial recorder (GPU/host
 * sampler + /metrics scraper, as `servelab run` uses it) and without it, in alternating rounds of the same run, so
 * drift of the machine hits both sides alike. Prints the median of each and their ratio (goal: within 1%).
 *
 *   npx tsc -p . && node dist/bench/telemetry-overhead.js [--url http://127.0.0.1:8000 --backend openai-completions]
 *       [--rounds 6] [--requests 64] [--concurrency 16] [--output-len 128] [--interval-ms 1000] [--fake-nvidia-smi]
 *
 * Smoke setting (CI, test/bench-smoke.test.ts): --rounds 1 --requests 32 --concurrency 4 --output-len 16 --interval-ms 200 --fake-nvidia-smi
 *
 * Without --url a simulator is started in its own process (and stopped at the end: a child left running kept this
 * bench from exiting after its figures). Without nvidia-smi on the PATH the sampler records the
 * host only (the figure then covers the host probes alone). --fake-nvidia-smi puts a FAKE nvidia-smi first on the
 * PATH that replays a row captured on an H200: it measures the sampler's cost on this host's CPU, NOT the cost of
 * querying a real GPU driver; the output says so. Run without it on a GPU machine for the real figure.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median } from 'simple-statistics';
import { LocalExecutor } from '../src/exec/local.js';
import { runBenchmark } from '../src/load/run.js';
import { BACKEND_KINDS, type BackendKind } from '../src/profiles/types.js';
import type { SimulatorProcess } from '../src/simulate/child.js';
import { startTrialRecorder } from '../src/telemetry/trial.js';
import { benchFlags, benchMain, noFigure, positiveInt, readySimulator, usageError } from './support/main.js';

interface Settings {
  backend: BackendKind;
  requests: number;
  concurrency: number;
  outputLen: number;
  intervalMs: number;
}

/** A simulator in its own process: a fixed 2 ms per token for every stream, so tok/s is steady between rounds. */
async function startSim(): Promise<SimulatorProcess> {
  const flags = ['--load-ms', '0', '--ttft-ms', '2', '--prefill-ms-per-token', '0', '--tpot-ms', '2', '--jitter', '0', '--concurrency-slowdown', '0'];
  return readySimulator([...flags, '--max-batch', '4096']);
}

/** A FAKE nvidia-smi: answers the sampler's queries with one row captured on an H200 (see test/fixtures/nvidia-smi). */
function installFakeNvidiaSmi(intervalMs: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-fake-nvidia-smi-'));
  const row = '0, 1515, 3201, 1980, 689.83, 700.00, 58, 100, 31731, 143771, 0x0000000000000004';
  // The -lms stream asks for a timestamp first and repeats every interval until killed.
  const script = [
    '#!/bin/sh',
    'case "$1" in',
    `  --query-gpu=timestamp,*) while :; do echo "$(date '+%Y/%m/%d %H:%M:%S.000'), ${row}"; sleep ${intervalMs / 1000}; done ;;`,
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

async function round(baseUrl: string, settings: Settings, withTelemetry: boolean): Promise<{ tokensPerSecond: number; gpuSamples: number; note?: string }> {
  const executor = new LocalExecutor();
  const recorder = withTelemetry ? startTrialRecorder(executor, baseUrl, { enabled: true, intervalMs: settings.intervalMs, serverMetrics: true }) : undefined;
  const result = await runBenchmark({
    baseUrl,
    backend: settings.backend,
    workload: { kind: 'concurrency', concurrency: settings.concurrency, requests: settings.requests },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 32 }, outputTokens: { kind: 'fixed', value: settings.outputLen }, seed: 1 },
    warmupRequests: 2,
    ignoreEos: true,
    requestTimeoutMs: 60_000,
    specMetrics: 'none',
  }).finally(() => recorder?.stop());
  const telemetry = await recorder?.stop();
  const level = result.levels[0]!;
  // A round with failed requests measured a different load: its tok/s is no figure of the recorder's cost.
  if (level.failed > 0) {
    throw noFigure(
      `${level.failed} of ${level.failed + level.completed} requests failed against ${baseUrl}: ${JSON.stringify(level.errorsByKind)}`,
      'check that the server answers (servelab bench URL), or leave out --url to measure against the simulator',
    );
  }
  const note = telemetry?.summary.gpuUnavailable;
  return { tokensPerSecond: level.outputTokensPerSecond, gpuSamples: telemetry?.series.gpu.length ?? 0, ...(note !== undefined && { note }) };
}

benchMain('telemetry-overhead', async () => {
  const args = benchFlags('telemetry-overhead', {
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
  if (!(BACKEND_KINDS as readonly string[]).includes(args.backend)) {
    throw usageError(`--backend ${args.backend} is not a backend`, `one of ${BACKEND_KINDS.join(', ')}`);
  }
  const rounds = positiveInt('--rounds', args.rounds);
  const settings: Settings = {
    backend: args.backend as BackendKind,
    requests: positiveInt('--requests', args.requests),
    concurrency: positiveInt('--concurrency', args.concurrency),
    outputLen: positiveInt('--output-len', args['output-len']),
    intervalMs: positiveInt('--interval-ms', args['interval-ms']),
  };
  if (args['fake-nvidia-smi']) {
    installFakeNvidiaSmi(settings.intervalMs);
    console.log('NOTE: FAKE nvidia-smi (replays a captured H200 row): this measures the sampler on this CPU, not a real GPU driver.');
  }
  const sim = args.url === undefined ? await startSim() : undefined;
  const baseUrl = args.url ?? sim!.url;
  const without: number[] = [];
  const withRecorder: number[] = [];
  let gpuSamples = 0;
  let note: string | undefined;
  try {
    console.log(`target ${baseUrl}${sim ? ' (simulator, own process)' : ''}; ${rounds} rounds each, alternating; sampling every ${settings.intervalMs} ms`);
    for (let i = 0; i < rounds; i++) {
      // Alternate which side goes first so a trend over the run does not favour one.
      const order = i % 2 === 0 ? [false, true] : [true, false];
      for (const telemetry of order) {
        const figures = await round(baseUrl, settings, telemetry);
        (telemetry ? withRecorder : without).push(figures.tokensPerSecond);
        if (telemetry) {
          gpuSamples += figures.gpuSamples;
          note ??= figures.note;
        }
      }
    }
  } finally {
    await sim?.stop();
  }
  const base = median(without);
  const measured = median(withRecorder);
  console.log(`without telemetry: median ${base.toFixed(1)} tok/s  [${without.map((v) => v.toFixed(0)).join(', ')}]`);
  console.log(`with telemetry:    median ${measured.toFixed(1)} tok/s  [${withRecorder.map((v) => v.toFixed(0)).join(', ')}]`);
  console.log(`GPU samples recorded: ${gpuSamples}${note ? ` (GPU telemetry: ${note})` : ''}`);
  console.log(`ratio with/without: ${(measured / base).toFixed(4)} (${(((measured - base) / base) * 100).toFixed(2)}%; goal: within ±1%)`);
});
