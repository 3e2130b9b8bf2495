/**
 * Drift-alarm specificity and sensitivity on real measurements:
 *
 *   node dist/bench/drift-specificity.js [--pool 40] [--history 10] [--reruns 5000] [--shift 0.10] [--jitter 0.05]
 *
 * 1. Measures `--pool` real trials (output tok/s of a short single-stream workload) against the built-in simulator
 *    with `--jitter` on this machine, as busy as it is: the trial-to-trial noise the alarm has to live with.
 * 2. Replays the runner's drift rule (experiment/drift.ts: driftDecision, default band settings) on `--reruns`
 *    reruns resampled from that pool: a history of `--history` trials and a rerun's first two trials, drawn
 *    without replacement. Unchanged reruns give the false-alarm rate; the same reruns with their trials scaled by
 *    (1 − shift) give the detection rate of a `--shift` slowdown within the run's first two trials.
 * Resampling treats trials as exchangeable: slow drifts of a busy host over minutes are not in the pool's order.
 * Targets: false alarms < 1%, detection of a 10% shift within 2 trials.
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { mean, sampleStandardDeviation } from 'simple-statistics';
import { driftDecision } from '../src/experiment/analysis/drift.js';
import { runBenchmark } from '../src/load/run.js';
import { mulberry32 } from '../src/util/random.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));

function flag(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  return index >= 0 ? Number(process.argv[index + 1]) : fallback;
}

const POOL = flag('pool', 40);
const HISTORY = flag('history', 10);
const RERUNS = flag('reruns', 5000);
const SHIFT = flag('shift', 0.1);
const JITTER = flag('jitter', 0.05);

/** The simulator as a separate process (as a real server is), on a free port. */
async function startSimulator(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [BIN, 'simulate', '--port', '0', '--load-ms', '0', '--tpot-ms', '4', '--ttft-ms', '10', '--jitter', String(JITTER)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let log = '';
    const onData = (chunk: Buffer) => {
      log += chunk.toString();
      const match = /listening on (http:\/\/\S+);/.exec(log);
      if (match) resolve(match[1]!);
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`simulator exited (${code}): ${log}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

async function measurePool(url: string): Promise<number[]> {
  const values: number[] = [];
  for (let trial = 0; trial < POOL; trial += 1) {
    const result = await runBenchmark({
      baseUrl: url,
      backend: 'openai-completions',
      workload: { kind: 'single-stream', requests: 4 },
      prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 32 }, outputTokens: { kind: 'fixed', value: 32 }, seed: trial },
      warmupRequests: 1,
      ignoreEos: true,
      requestTimeoutMs: 30_000,
      specMetrics: 'none',
    });
    const level = result.levels[0]!;
    if (level.failed > 0) throw new Error(`trial ${trial}: ${level.failed} requests failed`);
    values.push(level.outputTokensPerSecond);
  }
  return values;
}

/** Draw `count` distinct values of `pool`. */
function draw(pool: readonly number[], count: number, random: () => number): number[] {
  const copy = [...pool];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy.slice(0, count);
}

/** Whether the drift rule stops a run whose pair measures `own` (first two trials) against `history`. */
function alarms(own: number[], history: number[]): boolean {
  const first = driftDecision([own[0]!], history, { confirmable: true });
  if (first?.kind !== 'suspect') return false;
  return driftDecision(own, history, { confirmable: true })?.kind === 'alarm';
}

async function main(): Promise<void> {
  if (POOL < HISTORY + 2) throw new Error('--pool must be at least --history + 2');
  const server = await startSimulator();
  const startedAt = Date.now();
  let pool: number[];
  try {
    pool = await measurePool(server.url);
  } finally {
    server.stop();
  }
  const cv = sampleStandardDeviation(pool) / mean(pool);
  const random = mulberry32(20261203);
  let falseAlarms = 0;
  let detected = 0;
  let unguarded = 0;
  const bands: number[] = [];
  for (let rerun = 0; rerun < RERUNS; rerun += 1) {
    const sample = draw(pool, HISTORY + 2, random);
    const history = sample.slice(0, HISTORY);
    const own = sample.slice(HISTORY);
    const look = driftDecision([own[0]!], history, { confirmable: true });
    if (look?.check.unguarded) unguarded += 1;
    bands.push(look?.check.band ?? Number.NaN);
    if (alarms(own, history)) falseAlarms += 1;
    if (
      alarms(
        own.map((value) => value * (1 - SHIFT)),
        history,
      )
    )
      detected += 1;
  }
  bands.sort((a, b) => a - b);
  const pct = (count: number) => `${((count / RERUNS) * 100).toFixed(2)}%`;
  const falseRate = falseAlarms / RERUNS;
  const detectRate = detected / RERUNS;
  console.log(
    `pool: ${POOL} real trials in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; mean ${mean(pool).toFixed(1)} tok/s, CV ${(cv * 100).toFixed(2)}% (load average ${loadavg()[0]!.toFixed(2)})`,
  );
  console.log(
    `reruns: ${RERUNS} resampled, history ${HISTORY} trials; median band ±${bands[Math.floor(bands.length / 2)]!.toFixed(1)}%; unguarded (band > 20%): ${pct(unguarded)}`,
  );
  console.log(`false-alarm rate on unchanged reruns: ${pct(falseAlarms)} (target < 1%: ${falseRate < 0.01 ? 'met' : 'NOT met'})`);
  console.log(`detection of a ${(SHIFT * 100).toFixed(0)}% slowdown within 2 trials: ${pct(detected)}`);
  console.log(`ratio detection / false alarms: ${falseAlarms === 0 ? '∞ (no false alarm)' : (detectRate / falseRate).toFixed(1)}`);
}

await main();
