/**
 * Builds realistic runs in a real sqlite store for the report and UI tests, through the runner's own write
 * functions (createRun, insertTrial, …): an experiment file is loaded, planned, and every planned trial stored with
 * seeded synthetic metrics, samples and fingerprints. Only tests write to the store this way.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { computeVerdicts } from '../src/experiment/analysis/verdicts.js';
import { createRun, loadRun } from '../src/experiment/run/run-store.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import type { Fingerprint } from '../src/fingerprint/types.js';
import type { RequestSample } from '../src/load/types.js';
import { type Db, openStore } from '../src/store/db.js';
import { listTrials } from '../src/store/queries.js';
import { insertTrial, setRunStatus, setRunVerdicts } from '../src/store/runs.js';
import type { TrialMetrics } from '../src/store/types.js';
import { mulberry32 } from '../src/util/random.js';

export interface FixtureStore {
  dir: string;
  path: string;
  db: Db;
  cleanup(): void;
}

export function createFixtureStore(): FixtureStore {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-report-'));
  return fixtureStoreAt(dir, join(dir, 'store.db'));
}

/** The store at `path` (created if missing), removed with its directory `dir` by cleanup(). */
export function fixtureStoreAt(dir: string, path: string): FixtureStore {
  const db = openStore(path);
  return {
    dir,
    path,
    db,
    cleanup: () => {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface FixtureRunOptions {
  /** Experiment name (default "spec-decode-sweep"); runs of one name share drift history. */
  name?: string;
  /** How many planned trials to store (default: all). */
  trials?: number;
  /** Final status; 'done' also stores verdicts as finalizeRun does. Default: 'done' when all trials are stored. */
  status?: 'done' | 'running' | 'drift' | 'failed';
  message?: string;
  /** Multiplies every throughput (e.g. 0.7 for a run whose environment got slower). */
  scale?: number;
  /** Extra env recorded in every fingerprint, e.g. { NCCL_PROTO: 'LL' }. */
  env?: Record<string, string>;
  /** Seed of the synthetic noise (default derived from the run id). */
  seed?: number;
  /** Figures added to every trial's metrics, e.g. { prefixCacheHitRate: 0.4 } for the side columns. */
  metrics?: Partial<TrialMetrics>;
}

const EXPERIMENT_YAML = (name: string): string => `
name: ${JSON.stringify(name)}
description: EAGLE-3 speculative decoding depth sweep against plain decoding
profile: vllm
server:
  command: [vllm, serve, meta-llama/Llama-3.1-8B-Instruct, --port, "{port}"]
  env: { NCCL_PROTO: LL }
client:
  prompts: { kind: synthetic, inputTokens: { kind: fixed, value: 256 }, outputTokens: { kind: fixed, value: 128 }, seed: 1 }
workloads:
  - { kind: sweep, concurrencies: [1, 8, 32], requestsPerLevel: 32 }
trials: 4
seed: 7
baseline: baseline
variants:
  baseline: {}
grid:
  - name: "eagle3-s{steps}"
    params: { steps: [2, 4, 6] }
    args: [--speculative-config, '{"method":"eagle3","num_speculative_tokens":{steps}}']
`;

/** Store a run of the spec-decode sweep experiment; returns its id. */
export function buildFixtureRun(store: FixtureStore, options: FixtureRunOptions = {}): number {
  const name = options.name ?? 'spec-decode-sweep';
  const file = join(store.dir, `${name.replace(/[^\w-]/g, '_')}.yaml`);
  writeFileSync(file, EXPERIMENT_YAML(name));
  const experiment = loadExperiment(file);
  const runId = createRun(store.db, experiment);
  const { plan } = loadRun(store.db, runId);
  const random = mulberry32(options.seed ?? runId * 101);
  const count = options.trials ?? plan.trials.length;
  // Back-date the run so its trials (20 s apart) all lie between its start and now.
  const start = Date.now() - (count + 1) * 20_000;
  store.db.prepare('UPDATE runs SET started_at = ? WHERE id = ?').run(new Date(start - 5_000).toISOString(), runId);
  plan.trials.slice(0, count).forEach((planned, index) => {
    const variant = experiment.variants.find((candidate) => candidate.name === planned.variant)!;
    const workload = experiment.workloads.find((candidate) => candidate.label === planned.workload)!;
    const concurrency = workload.concurrency ?? 1;
    const steps = Number(variant.params.steps ?? 0);
    const metrics = { ...trialMetrics(concurrency, steps, options.scale ?? 1, random), ...options.metrics };
    const startedAt = new Date(start + index * 20_000).toISOString();
    insertTrial(
      store.db,
      {
        runId,
        variant: planned.variant,
        serverKey: planned.serverKey,
        workload: planned.workload,
        concurrency,
        params: variant.params,
        block: planned.block,
        repetition: planned.repetition,
        startedAt,
        finishedAt: new Date(start + index * 20_000 + 15_000).toISOString(),
        metrics,
      },
      fingerprint([...variant.server.command.map((arg) => arg.replace('{port}', '8000'))], { ...variant.server.env, ...options.env }),
      samples(metrics, concurrency, Date.parse(startedAt), random),
    );
  });
  const status = options.status ?? (count === plan.trials.length ? 'done' : 'running');
  if (status === 'done') setRunVerdicts(store.db, runId, computeVerdicts(experiment, listTrials(store.db, runId)));
  if (status !== 'running') setRunStatus(store.db, runId, status, options.message);
  return runId;
}

/** Spec decoding helps at low concurrency and hurts when the batch is full; acceptance falls with depth. */
function trialMetrics(concurrency: number, steps: number, scale: number, random: () => number): TrialMetrics {
  const acceptance = steps > 0 ? 0.86 - 0.07 * steps + (random() - 0.5) * 0.02 : undefined;
  const specGain = steps > 0 ? (1 + (acceptance ?? 0) * steps * 0.35) / (1 + 0.12 * steps * Math.log2(concurrency + 1)) : 1;
  const perStream = 92 * specGain * (1 - 0.012 * concurrency) * scale * (1 + (random() - 0.5) * 0.03);
  const throughput = perStream * concurrency * 0.97;
  const tpot = 1000 / perStream;
  return {
    outputTokensPerSecond: throughput,
    requestsPerSecond: throughput / 128,
    perStreamTokensPerSecond: perStream,
    ttftMedianMs: 38 + 2.5 * concurrency,
    ttftP90Ms: 52 + 4 * concurrency,
    ttftP99Ms: 60 + 5 * concurrency,
    tpotMedianMs: tpot,
    itlP99Ms: tpot * 1.8,
    e2eMedianMs: 38 + 2.5 * concurrency + tpot * 127,
    completed: 24,
    failed: 0,
    ...(acceptance !== undefined && {
      acceptanceRate: acceptance,
      meanAcceptedLength: 1 + acceptance * steps,
      // A later draft token is accepted only after every earlier one: shares fall with the position.
      acceptanceByPosition: Array.from({ length: steps }, (_, position) => acceptance ** (position + 1)),
    }),
  };
}

function samples(metrics: TrialMetrics, concurrency: number, startMs: number, random: () => number): RequestSample[] {
  return Array.from({ length: metrics.completed }, (_, index) => {
    const ttft = metrics.ttftMedianMs * (0.7 + random() * 0.6 + (random() < 0.08 ? 0.8 : 0));
    const tpot = metrics.tpotMedianMs * (0.9 + random() * 0.2);
    return {
      index,
      sentAtMs: startMs + Math.floor(index / concurrency) * 1500,
      inputTokens: 256,
      outputTokens: 128,
      ttftMs: ttft,
      itlMs: [tpot, tpot],
      tpotMs: tpot,
      e2eMs: ttft + tpot * 127,
    };
  });
}

function fingerprint(command: string[], env: Record<string, string>): Fingerprint {
  return {
    servelabVersion: '0.1.0',
    executor: 'local',
    host: {
      hostname: 'gpu-node-07',
      os: 'Ubuntu 22.04.4 LTS',
      kernel: '5.15.0-105-generic',
      cpuModel: 'AMD EPYC 9454 48-Core Processor',
      cpus: 96,
      memoryGiB: 1511,
    },
    gpus: [{ index: 0, name: 'NVIDIA H200', driver: '560.35.03', memoryMiB: 143771, smClockMHz: 1980, maxSmClockMHz: 1980, powerLimitW: 700 }],
    command,
    env,
    packages: { vllm: '0.11.0', torch: '2.8.0+cu128' },
    model: 'meta-llama/Llama-3.1-8B-Instruct',
  };
}
