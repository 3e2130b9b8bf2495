/**
 * Drift protection: the reference guard and the drift rule, their false-alarm rate and their detection.
 *
 *   node dist/bench/drift-specificity.js [--seeds 10000] [--spread 0.08] [--short 4]
 *                                        [--pool 40] [--history 10] [--reruns 5000] [--shift 0.10] [--jitter 0.05]
 *
 * A. The motivating case, modelled (no server needed; `--seeds` seeds): a one-run history of `--short` trials
 *    whose start-to-start spread is ±`--spread` (95% of trials within it: each trial a server start whose level is
 *    normal with SD spread/1.96), and a fingerprint with tuning variables and volatile readings (host load, current
 *    SM clock, memory in use, clock events) drawn afresh for every run. Each seed reruns it three ways:
 *    - a tuning variable lost or set (NCCL_PROTO/NCCL_ALGO unset, GGML_CUDA_DISABLE_GRAPHS=1) with a `--shift`
 *      slowdown: stopped by the guard before its first trial (experiment/run/reference-guard.ts:
 *      configurationChanges), or else by the rule at its first or second trial;
 *    - unchanged (fresh readings, same configuration, same level): any stop is a false alarm;
 *    - a `--shift` slowdown with an identical configuration (a machine cause): only the rule can catch it.
 *    Targets: the env change stopped by its second trial in >= 95% of seeds, unchanged reruns stopped < 1%.
 * B. The rule on real measurements (skipped with --pool 0):
 *    1. Measures `--pool` real trials (output tok/s of a short single-stream workload) against the built-in
 *       simulator with `--jitter` on this machine, as busy as it is: the trial-to-trial noise the alarm lives with.
 *    2. Replays the runner's drift rule (experiment/analysis/drift.ts: driftDecision, default band settings) on
 *       `--reruns` reruns resampled from that pool: a history of `--history` trials and a rerun's first two
 *       trials, drawn without replacement. Unchanged reruns give the false-alarm rate; the same reruns with their
 *       trials scaled by (1 − shift) give the detection rate of a `--shift` slowdown within the first two trials.
 *    Resampling treats trials as exchangeable: slow drifts of a busy host over minutes are not in the pool's order.
 *    Targets: false alarms < 1%, detection of a 10% shift within 2 trials.
 *
 * Smoke setting (CI, test/bench-smoke.test.ts): --seeds 200 --pool 6 --history 4 --reruns 200.
 */
import { loadavg } from 'node:os';
import { mean, sampleStandardDeviation } from 'simple-statistics';
import { driftDecision, MAX_USEFUL_BAND_PCT } from '../src/experiment/analysis/drift.js';
import { configurationChanges } from '../src/experiment/run/reference-guard.js';
import type { Fingerprint } from '../src/fingerprint/types.js';
import { runBenchmark } from '../src/load/run.js';
import type { SimulatorProcess } from '../src/simulate/child.js';
import { mulberry32, type Random, standardNormal } from '../src/util/random.js';
import { benchFlags, benchMain, noFigure, nonNegativeNumber, positiveInt, positiveNumber, readySimulator, usageError } from './support/main.js';

const args = {
  pool: { type: 'string', default: '40' },
  history: { type: 'string', default: '10' },
  reruns: { type: 'string', default: '5000' },
  shift: { type: 'string', default: '0.1' },
  jitter: { type: 'string', default: '0.05' },
  seeds: { type: 'string', default: '10000' },
  spread: { type: 'string', default: '0.08' },
  short: { type: 'string', default: '4' },
} as const;

interface Settings {
  pool: number;
  history: number;
  reruns: number;
  shift: number;
  jitter: number;
  seeds: number;
  spread: number;
  short: number;
}

function readSettings(): Settings {
  const values = benchFlags('drift-specificity', { options: args });
  // --pool 0 skips part B.
  const pool = values.pool === '0' ? 0 : positiveInt('--pool', values.pool);
  const history = positiveInt('--history', values.history);
  if (pool > 0 && pool < history + 2)
    throw usageError(`--pool ${pool} is smaller than --history + 2 (${history + 2})`, `e.g. --pool ${history + 2}, or --pool 0 to skip part B`);
  return {
    pool,
    history,
    reruns: positiveInt('--reruns', values.reruns),
    shift: positiveNumber('--shift', values.shift),
    jitter: nonNegativeNumber('--jitter', values.jitter),
    seeds: positiveInt('--seeds', values.seeds),
    spread: positiveNumber('--spread', values.spread),
    short: positiveInt('--short', values.short),
  };
}

/** The simulator as a separate process (as a real server is), on a free port. */
async function startSimulator(jitter: number): Promise<SimulatorProcess> {
  return readySimulator(['--load-ms', '0', '--tpot-ms', '4', '--ttft-ms', '10', '--jitter', String(jitter)]);
}

async function measurePool(url: string, size: number): Promise<number[]> {
  const values: number[] = [];
  for (let trial = 0; trial < size; trial += 1) {
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
    if (level.failed > 0) {
      throw noFigure(
        `pool trial ${trial}: ${level.failed} of 4 requests to the simulator failed: ${JSON.stringify(level.errorsByKind)}`,
        "the pool would not be this machine's trial noise: rerun on a less loaded machine, or --pool 0 for part A alone",
      );
    }
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

/** The H200 llama-server setup of the motivating case; `readings` are the volatile facts of one run. */
function h200Fingerprint(env: Record<string, string>, random: Random): Fingerprint {
  const preflight: Record<string, string> = {};
  if (random() < 0.5) preflight['host.load'] = `host busy: load average ${(8 + random() * 8).toFixed(2)} on 16 CPUs`;
  if (random() < 0.1) preflight['gpu0.foreignMemory'] = `GPU 0: ${(1 + random() * 30).toFixed(1)} GiB of memory in use before the server starts`;
  if (random() < 0.2) preflight['gpu0.clockEvents'] = 'GPU 0: clock-event reasons active: SW power cap';
  return {
    servelabVersion: '0.1.0',
    executor: 'local',
    host: { hostname: 'h200-1', os: 'Linux', kernel: '6.8.0', cpuModel: 'Xeon', cpus: 16, memoryGiB: 125.7 },
    gpus: [
      {
        index: 0,
        name: 'NVIDIA H200',
        driver: '570.86.15',
        memoryMiB: 143771,
        smClockMHz: Math.round(1400 + random() * 580),
        maxSmClockMHz: 1980,
        powerLimitW: 700,
      },
    ],
    command: ['llama-server', '-m', 'model.gguf', '-ngl', '99', '--port', '{port}'],
    env,
    packages: { 'llama.cpp': 'b4500', 'llama.cpp.commit': '1a2b3c4' },
    ...(Object.keys(preflight).length > 0 && { preflight }),
  };
}

const TUNED_ENV = { NCCL_PROTO: 'LL', NCCL_ALGO: 'Ring', CUDA_VISIBLE_DEVICES: '0' };
/** The ways a tuning setting goes missing: a reboot that lost an export, a variable set by a stray profile. */
const LOST_SETTINGS: Array<(env: Record<string, string>) => Record<string, string>> = [
  ({ NCCL_PROTO: _, ...rest }) => rest,
  ({ NCCL_ALGO: _, ...rest }) => rest,
  (env) => ({ ...env, GGML_CUDA_DISABLE_GRAPHS: '1' }),
];

/** When a rerun is stopped: 0 by the guard before its first trial, 1 or 2 by the rule at that trial, undefined: not. */
function stoppedAt(reference: Fingerprint, current: Fingerprint, history: number[], own: number[]): 0 | 1 | 2 | undefined {
  if (configurationChanges(reference, current).length > 0) return 0;
  if (driftDecision([own[0]!], history, { confirmable: true })?.kind === 'alarm') return 1;
  return driftDecision(own, history, { confirmable: true })?.kind === 'alarm' ? 2 : undefined;
}

/** Part A: the guard and the rule on a short history of a spread-out server, every run's readings drawn afresh. */
function modelledCase({ seeds, spread, short, shift }: Settings): void {
  const random = mulberry32(20261204);
  const sd = spread / 1.96;
  const level = 600;
  const trial = (factor: number) => level * factor * (1 + sd * standardNormal(random));
  let envStopped = 0;
  let envByGuard = 0;
  let unchangedStopped = 0;
  let hiddenStopped = 0;
  const unguarded = { 'history too short': 0, 'history too noisy': 0 };
  for (let seed = 0; seed < seeds; seed += 1) {
    const reference = h200Fingerprint({ ...TUNED_ENV }, random);
    const history = Array.from({ length: short }, () => trial(1));
    const lost = LOST_SETTINGS[Math.floor(random() * LOST_SETTINGS.length)]!;
    const changed = stoppedAt(reference, h200Fingerprint(lost({ ...TUNED_ENV }), random), history, [trial(1 - shift), trial(1 - shift)]);
    if (changed !== undefined) envStopped += 1;
    if (changed === 0) envByGuard += 1;
    const own = [trial(1), trial(1)];
    if (stoppedAt(reference, h200Fingerprint({ ...TUNED_ENV }, random), history, own) !== undefined) unchangedStopped += 1;
    const hidden = [trial(1 - shift), trial(1 - shift)];
    if (stoppedAt(reference, h200Fingerprint({ ...TUNED_ENV }, random), history, hidden) !== undefined) hiddenStopped += 1;
    const look = driftDecision([own[0]!], history, { confirmable: true })?.check.unguarded;
    if (look) unguarded[look] += 1;
  }
  const pct = (count: number) => `${((count / seeds) * 100).toFixed(2)}%`;
  console.log(
    `A. modelled: ${seeds} seeds; history ${short} trials of one run, start-to-start spread ±${(spread * 100).toFixed(0)}% (SD ${(sd * 100).toFixed(2)}%); volatile readings drawn afresh every run`,
  );
  console.log(
    `   env change + ${(shift * 100).toFixed(0)}% slowdown stopped by its 2nd trial: ${pct(envStopped)} (guard before trial 1: ${pct(envByGuard)}) (target >= 95%: ${envStopped / seeds >= 0.95 ? 'met' : 'NOT met'})`,
  );
  console.log(`   unchanged reruns stopped (false alarms): ${pct(unchangedStopped)} (target < 1%: ${unchangedStopped / seeds < 0.01 ? 'met' : 'NOT met'})`);
  console.log(`   ${(shift * 100).toFixed(0)}% slowdown with an identical configuration (rule only) stopped: ${pct(hiddenStopped)}`);
  console.log(
    `   the rule's view of that history: "history too short" ${pct(unguarded['history too short'])}, "history too noisy" ${pct(unguarded['history too noisy'])}, band within ${MAX_USEFUL_BAND_PCT}% ${pct(seeds - unguarded['history too short'] - unguarded['history too noisy'])}`,
  );
}

/** Part B: the rule replayed on reruns resampled from real trials of this machine. */
async function measuredCase(settings: Settings): Promise<void> {
  const { pool: poolSize, history: historyLength, reruns, shift } = settings;
  const server = await startSimulator(settings.jitter);
  const startedAt = Date.now();
  let pool: number[];
  try {
    pool = await measurePool(server.url, poolSize);
  } finally {
    await server.stop();
  }
  const cv = sampleStandardDeviation(pool) / mean(pool);
  const random = mulberry32(20261203);
  let falseAlarms = 0;
  let detected = 0;
  let unguarded = 0;
  const bands: number[] = [];
  for (let rerun = 0; rerun < reruns; rerun += 1) {
    const sample = draw(pool, historyLength + 2, random);
    const history = sample.slice(0, historyLength);
    const own = sample.slice(historyLength);
    const look = driftDecision([own[0]!], history, { confirmable: true });
    if (look?.check.unguarded) unguarded += 1;
    bands.push(look?.check.band ?? Number.NaN);
    if (alarms(own, history)) falseAlarms += 1;
    if (
      alarms(
        own.map((value) => value * (1 - shift)),
        history,
      )
    )
      detected += 1;
  }
  bands.sort((a, b) => a - b);
  const pct = (count: number) => `${((count / reruns) * 100).toFixed(2)}%`;
  const falseRate = falseAlarms / reruns;
  const detectRate = detected / reruns;
  console.log(
    `B. pool: ${poolSize} real trials in ${((Date.now() - startedAt) / 1000).toFixed(1)} s; mean ${mean(pool).toFixed(1)} tok/s, CV ${(cv * 100).toFixed(2)}% (load average ${loadavg()[0]!.toFixed(2)})`,
  );
  console.log(
    `   reruns: ${reruns} resampled, history ${historyLength} trials; median band ±${bands[Math.floor(bands.length / 2)]!.toFixed(1)}%; unguarded (band > 20%): ${pct(unguarded)}`,
  );
  console.log(`   false-alarm rate on unchanged reruns: ${pct(falseAlarms)} (target < 1%: ${falseRate < 0.01 ? 'met' : 'NOT met'})`);
  console.log(`   detection of a ${(shift * 100).toFixed(0)}% slowdown within 2 trials: ${pct(detected)}`);
  console.log(`   ratio detection / false alarms: ${falseAlarms === 0 ? '∞ (no false alarm)' : (detectRate / falseRate).toFixed(1)}`);
}

benchMain('drift-specificity', async () => {
  const settings = readSettings();
  modelledCase(settings);
  if (settings.pool > 0) await measuredCase(settings);
});
