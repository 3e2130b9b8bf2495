/**
 * An in-process stand-in for the machine under an experiment: an `Executor` whose "servers" are tiny HTTP servers
 * on 127.0.0.1 (they answer health, models, cache-reset and /metrics, so the runner's liveness watch, cache reset and
 * scraper talk to a real socket) and whose load client returns figures a test scripts, at once. The experiment
 * runner, plan, journal, store, validity rule, race and drift logic are the real ones: only the machine is fake,
 * so their permutations run in milliseconds instead of a `servelab run` with simulators each.
 */
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Executor } from '../src/exec/types.js';
import type { CommandResult } from '../src/fingerprint/types.js';
import type { ExitInfo, LaunchHooks, RunningServer, ServerSpec } from '../src/launch/types.js';
import { searchCapacity } from '../src/load/capacity.js';
import { workloadLabels } from '../src/load/level.js';
import type { BenchOptions, BenchResult, LevelResult, RequestSample } from '../src/load/types.js';
import { summarizeLevel } from '../src/metrics/summary.js';
import { mulberry32 } from '../src/util/random.js';
import { writeExperiment } from './support-experiment.js';

/** What one run of the load client measures on the fake machine. */
export interface FakeTrial {
  /** Time per output token of every request, ms (±0.5 % seeded noise); × the level in a capacity search's steps. */
  tpotMs: number;
  ttftMs?: number;
  /** This many of the requests fail with an HTTP 500. */
  failed?: number;
  /** The server is killed (SIGKILL) during this run: its port closes, its requests fail to connect. */
  dies?: boolean;
}

/** Which server ran the load, and how many loads the executor ran before it (0-based). */
export interface FakeBenchCall {
  spec: ServerSpec;
  /** The value after the last `flag` in the server's command (`--tpot-ms 3` → "3"): a grid appends its args. */
  arg(flag: string): string | undefined;
  bench: number;
  /** The load client's options of this run (workload, warm-up…). */
  options: BenchOptions;
}

export type FakeMachine = (call: FakeBenchCall) => FakeTrial;

const OUTPUT_TOKENS = 32;
const INPUT_TOKENS = 16;

export class FakeExecutor implements Executor {
  readonly kind = 'local';
  readonly hostLabel = 'local';
  /** Every server spec launched, in order. */
  readonly launches: ServerSpec[] = [];
  benches = 0;
  private readonly servers = new Map<string, FakeServer>();
  private readonly random = mulberry32(7);

  constructor(private readonly machine: FakeMachine) {}

  async launch(spec: ServerSpec, hooks: LaunchHooks): Promise<RunningServer> {
    hooks.signal?.throwIfAborted();
    this.launches.push(spec);
    const server = await FakeServer.start(spec);
    this.servers.set(server.baseUrl, server);
    // No process of its own, so no onSpawn (as a remote executor): a resume must never signal a recorded pid.
    const command = spec.command.map((arg) => arg.replaceAll('{port}', String(server.port)));
    return {
      baseUrl: server.baseUrl,
      pid: 0,
      logPath: spec.logPath,
      command,
      env: spec.env,
      template: { command: spec.command, env: spec.env },
      ready: { baseUrl: server.baseUrl, elapsedMs: 1, phases: [], checks: ['health'], model: 'fake' },
      exited: server.exited,
      logTail: () => Promise.resolve([`fake server at ${server.baseUrl}`]),
      stop: () => server.kill(null),
    };
  }

  async bench(options: BenchOptions): Promise<BenchResult> {
    const server = this.servers.get(options.baseUrl);
    if (!server) throw new Error(`fake executor: no server at ${options.baseUrl}`);
    const { spec } = server;
    const trial = this.machine({ spec, arg: (flag) => spec.command[spec.command.lastIndexOf(flag) + 1], bench: this.benches++, options });
    if (trial.dies) await server.kill('SIGKILL');
    const level = (label: string, requests: number, load = 1): LevelResult => {
      const loaded = { ...trial, tpotMs: trial.tpotMs * load };
      const samples = Array.from({ length: requests }, (_, index) => this.sample(index, loaded, index < (trial.dies ? requests : (trial.failed ?? 0))));
      const durationS = samples.reduce((sum, sample) => sum + (sample.e2eMs ?? 1), 0) / 1000;
      return summarizeLevel({ label, durationS, samples, tokenCounts: { method: 'server-usage', trusted: false } });
    };
    const workload = options.workload;
    // A capacity search runs for real (load/capacity.ts) over levels whose time per token grows in proportion to the load.
    const levels =
      workload.kind === 'capacity'
        ? await searchCapacity(workload, (plan) => Promise.resolve(level(plan.label, plan.requests, plan.concurrency ?? plan.rate!.requestsPerSecond)))
        : [level(workloadLabels(workload)[0]!, workload.kind === 'sweep' ? workload.requestsPerLevel : (workload.requests ?? 8))];
    return {
      schemaVersion: 1,
      startedAt: new Date().toISOString(),
      baseUrl: options.baseUrl,
      backend: options.backend,
      model: 'fake',
      tokenCountMethod: 'server-usage',
      interrupted: false,
      levels,
    };
  }

  run(argv: string[]): Promise<CommandResult> {
    // A bare machine: no nvidia-smi, no python. Fingerprinting leaves those parts empty.
    return Promise.resolve({ code: 127, stdout: '', stderr: `${argv[0]}: not found` });
  }

  /** Servers still up (the runner must have stopped every one it started). */
  get running(): number {
    return [...this.servers.values()].filter((server) => server.up).length;
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map((server) => server.kill(null)));
  }

  private sample(index: number, trial: FakeTrial, failed: boolean): RequestSample {
    const base = { index, sentAtMs: Date.now(), inputTokens: INPUT_TOKENS, requestedTokens: OUTPUT_TOKENS, itlMs: [] };
    if (failed) {
      return trial.dies
        ? { ...base, outputTokens: 0, error: { kind: 'connection', message: 'connect ECONNREFUSED' } }
        : { ...base, outputTokens: 0, error: { kind: 'http-5xx', message: 'HTTP 500' } };
    }
    const tpotMs = trial.tpotMs * (1 + (this.random() - 0.5) * 0.01);
    const ttftMs = trial.ttftMs ?? 5;
    return {
      ...base,
      outputTokens: OUTPUT_TOKENS,
      ttftMs,
      tpotMs,
      itlMs: Array.from({ length: OUTPUT_TOKENS - 1 }, () => tpotMs),
      e2eMs: ttftMs + tpotMs * (OUTPUT_TOKENS - 1),
    };
  }
}

/** The fake server's socket: 200 with a small JSON body for any request, until it is killed. */
class FakeServer {
  up = true;
  readonly exited: Promise<ExitInfo>;
  private resolveExit!: (info: ExitInfo) => void;

  private constructor(
    private readonly http: Server,
    readonly spec: ServerSpec,
    readonly port: number,
  ) {
    this.exited = new Promise((resolve) => (this.resolveExit = resolve));
  }

  static async start(spec: ServerSpec): Promise<FakeServer> {
    const http = createServer((request, response) => {
      const body = request.url === '/metrics' ? '' : JSON.stringify({ object: 'list', data: [{ id: 'fake' }] });
      response.writeHead(200, { 'content-type': request.url === '/metrics' ? 'text/plain' : 'application/json' }).end(body);
    });
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    return new FakeServer(http, spec, (http.address() as AddressInfo).port);
  }

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Close the port; `signal` null is a clean stop (exit code 0), else the process "died" of it. */
  async kill(signal: NodeJS.Signals | null): Promise<void> {
    if (!this.up) return;
    this.up = false;
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
    this.resolveExit({ code: signal === null ? 0 : null, signal });
  }
}

/**
 * A search's experiment file for the fake machine: the server is `fake-server`, telemetry off, output tok/s maximized,
 * one single-stream level unless `fields` says otherwise. The tests differ in their space and machine, not in this.
 */
export function fakeSearchFile(dir: string, search: Record<string, unknown>, fields: Record<string, unknown> = {}): string {
  return writeExperiment(dir, 'search.yaml', {
    server: { command: ['fake-server', '--port', '{port}'], readyTimeout: '5m' },
    telemetry: { enabled: false },
    variants: {},
    workloads: [{ kind: 'single-stream', requests: 3 }],
    objective: { maximize: 'outputTokensPerSecond' },
    ...fields,
    search,
  });
}
