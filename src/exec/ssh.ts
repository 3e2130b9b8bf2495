import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import { startOnChosenPort } from '../launch/chosen-port.js';
import { LogMonitor } from '../launch/log-monitor.js';
import { fillSpec, templatedEnv } from '../launch/placeholders.js';
import { describeOwner, isPortProxy } from '../launch/port-owner.js';
import { type PortRange, pickFreePort, serverPortRange } from '../launch/port-range.js';
import { failStart, readyOptionsOf } from '../launch/ready-gate.js';
import { SERVER_FILE_SETTINGS } from '../launch/server-schema.js';
import type { ExitInfo, LaunchHooks, RunningServer, ServerSpec } from '../launch/types.js';
import { runBenchmark } from '../load/run.js';
import type { BenchOptions, BenchResult } from '../load/types.js';
import { waitForReady } from '../ready/wait.js';
import { UserError } from '../util/errors.js';
import { readLastLines } from '../util/log-tail.js';
import { redactor } from '../util/redact.js';
import { benchArgv, parseBenchResult, remoteBaseUrl } from './remote-bench.js';
import {
  environScript,
  type HostPorts,
  listenerOwnerScript,
  PORTS_SCRIPT,
  parseEnviron,
  parseHostPorts,
  parseListenerOwner,
  remotePathWord,
  removeJobScript,
  shellJoin,
  shellQuote,
  stopScript,
  taggedJobsScript,
} from './remote-shell.js';
import { RemoteJob } from './ssh-job.js';
import { type RemoteEndpoint, SshTransport } from './ssh-transport.js';
import type { CommandResult, Executor, ExecutorConfig, LeftoverJob } from './types.js';

type SshConfig = Extract<ExecutorConfig, { kind: 'ssh' }>;

const STOP_GRACE_S = 10;
// Longer than the reconnect window: a job is only given up when its servelab is surely gone, not merely cut off.
const HEARTBEAT_TIMEOUT_MIN = 15;
const WATCH_INTERVAL_MS = 1000;
// Probes go through the SSH forward: slower than launch's local schedule, each refused probe costs a channel.
const REMOTE_POLL_SCHEDULE = { initialMs: 100, factor: 2, capMs: 1000 };
const FATAL_SETTLE_MS = 1500;
/**
 * A command that takes longer than this to start on the host is worth a warning: the watch runs one per server
 * a second, and a `conda init`/`pyenv init` in the login shell's rc file costs each of them its CPU (docs/remote.md).
 */
const SLOW_COMMAND_S = 0.5;

export interface SshExecutorContext {
  workDir: string;
  /** Progress lines (reconnects); default: stderr. */
  log?: (line: string) => void;
  /**
   * Names this executor's jobs on the host as one part of one run (letters and digits: store, run, lane). A later
   * executor with the same tag is a later runner of that part, which holds its lease: jobs it finds with the tag were
   * left by a runner that was killed, and are stopped before it starts anything there.
   */
  jobTag?: string;
}

interface LiveServer {
  job: RemoteJob;
  stop(): Promise<void>;
}

/**
 * Runs servers on an SSH host. Each server starts detached there (own session, log and pid files in remoteDir) and is
 * watched by polling over a multiplexed connection, so a dropped connection delays the watch but never kills or
 * orphans the server; its port is reached through a local forward. The load client runs here or on the host.
 */
export class SshExecutor implements Executor {
  readonly kind = 'ssh' as const;
  readonly hostLabel: string;
  private readonly config: SshConfig;
  private readonly transport: SshTransport;
  private readonly remoteDir: string;
  private readonly log: (line: string) => void;
  private readonly live = new Set<LiveServer>();
  /** Where each local forward we handed out as a baseUrl leads on the host. */
  private readonly remoteEndpoints = new Map<number, RemoteEndpoint>();
  private readonly jobTag: string | undefined;
  /** How long `true` takes on the host, timed once after the first connect. */
  private commandStartup: Promise<void> | undefined;
  /** The stop of jobs an earlier runner left (jobTag), once, before this executor's first job. */
  private leftovers: Promise<LeftoverJob[] | undefined> | undefined;
  private readonly onExit = () => {
    for (const server of this.live) server.job.stopSync(STOP_GRACE_S);
  };
  private readonly onSignal = (signal: NodeJS.Signals) => {
    // Only when nobody else handles the signal (the runner does, and then calls close()): the default action
    // would end the process without an 'exit' event and leave the remote servers running.
    if (process.listenerCount(signal) > 1) return;
    this.onExit();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };

  constructor(config: SshConfig, context: SshExecutorContext) {
    this.config = config;
    this.hostLabel = config.host;
    this.remoteDir = config.remoteDir ?? '~/.servelab/remote';
    this.jobTag = context.jobTag;
    this.log = context.log ?? ((line) => process.stderr.write(`servelab [${config.host}]: ${line}\n`));
    this.transport = new SshTransport(
      {
        host: config.host,
        ...(config.port !== undefined && { port: config.port }),
        ...(config.identityFile && { identityFile: config.identityFile }),
        ...(config.sshOptions && { sshOptions: config.sshOptions }),
      },
      { log: this.log },
    );
  }

  /** The SSH transport, for tests that simulate a dropped connection. */
  get connection(): SshTransport {
    return this.transport;
  }

  /** The master connection, and once, a check of how long a command takes to start on the host. */
  private async connect(): Promise<void> {
    await this.transport.connect();
    this.commandStartup ??= this.checkCommandStartup();
    await this.commandStartup;
  }

  private async checkCommandStartup(): Promise<void> {
    let fastest = Infinity;
    for (let attempt = 0; attempt < 2; attempt++) {
      const started = performance.now();
      const result = await this.transport.exec('true', { timeoutMs: 30_000 });
      if (result.code !== 0) return;
      fastest = Math.min(fastest, (performance.now() - started) / 1000);
    }
    if (fastest <= SLOW_COMMAND_S) return;
    this.log(
      `a command takes ${fastest.toFixed(1)} s to start on ${this.hostLabel} (\`true\` over the open connection): servelab runs about one a second per server there, and what the login shell's startup files do (conda or pyenv init in ~/.bashrc?) takes CPU from the machine under test; see "Each poll is one command on the host" in docs/remote.md`,
    );
  }

  async run(argv: string[], timeoutMs = 30_000): Promise<CommandResult> {
    await this.connect();
    const result = await this.transport.execRetrying(`exec ${shellJoin(argv)} </dev/null`, { timeoutMs, what: `running ${argv[0]}` });
    return { code: result.code, stdout: result.stdout.toString('utf8'), stderr: result.stderr };
  }

  async launch(spec: ServerSpec, hooks: LaunchHooks): Promise<RunningServer> {
    await this.connect();
    await this.stopLeftovers();
    return startOnChosenPort(
      spec,
      hooks,
      () => this.freeRemotePort(spec.portRange),
      (port, fixed) => this.launchOnPort(spec, hooks, port, fixed),
    );
  }

  private async launchOnPort(spec: ServerSpec, hooks: LaunchHooks, remotePort: number, fixed: boolean): Promise<RunningServer> {
    if (fixed) await this.assertRemotePortFree(remotePort);
    // By default the server listens on the host's loopback only: we reach it through the forward, nobody else can.
    const bindHost = spec.host ?? '127.0.0.1';
    const remote = { host: bindHost === '0.0.0.0' || bindHost === '::' ? '127.0.0.1' : bindHost, port: remotePort };
    const { command, env: specEnv } = fillSpec(spec, { port: remotePort, host: bindHost });
    const dir = `${this.remoteDir.replace(/\/+$/, '')}/${jobName('server', this.jobTag)}`;

    mkdirSync(dirname(spec.logPath), { recursive: true });
    appendFileSync(spec.logPath, `\n--- servelab launch on ${this.hostLabel} ${new Date().toISOString()} (${dir}): ${redactor().args(command).join(' ')}\n`);
    const startOffset = statSync(spec.logPath).size;
    const startedAt = performance.now();
    const job = await RemoteJob.start(
      this.transport,
      {
        dir,
        command,
        env: specEnv,
        ...(spec.unsetEnv && { unsetEnv: spec.unsetEnv }),
        ...(spec.cwd && { cwd: spec.cwd }),
        heartbeatTimeoutMinutes: HEARTBEAT_TIMEOUT_MIN,
      },
      `the server (${command[0]})`,
    );
    hooks.onSpawn?.(job.pid);

    // The remote log is mirrored into spec.logPath and read with the same monitor as a local launch.
    const log = new LogMonitor(spec.profile, spec.logPath, startOffset, FATAL_SETTLE_MS);

    const watchAbort = new AbortController();
    const exited = this.watch(job, spec.logPath, watchAbort.signal).then((info) => {
      log.processExited(info);
      return info;
    });

    let localPort: number | undefined;
    let stopping: Promise<void> | undefined;
    const live: LiveServer = {
      job,
      stop: () =>
        (stopping ??= (async () => {
          try {
            await job.stop(STOP_GRACE_S);
            await exited;
            // Its log is mirrored in spec.logPath by now; the host keeps nothing that piles up run after run.
            await job.remove();
          } finally {
            watchAbort.abort();
            this.live.delete(live);
            if (localPort !== undefined) {
              this.remoteEndpoints.delete(localPort);
              await this.transport.unforward(localPort);
            }
            this.updateExitHooks();
          }
        })()),
    };
    this.live.add(live);
    this.updateExitHooks();

    let ready;
    try {
      localPort = await this.transport.forward(remote);
      this.remoteEndpoints.set(localPort, remote);
      ready = await waitForReady({
        baseUrl: `http://127.0.0.1:${localPort}`,
        startedAt,
        monitor: log,
        schedule: REMOTE_POLL_SCHEDULE,
        checkListener: () => this.listenerMismatch(remotePort, job.pgid),
        // Executors serve experiment files: readiness hints name the file's keys unless the caller says otherwise.
        ...readyOptionsOf(spec, { settingNames: SERVER_FILE_SETTINGS, ...hooks }),
      });
    } catch (error) {
      return failStart(error, live.stop, log, fixed ? undefined : { exited });
    }
    log.close();

    const remoteEnv = parseEnviron(
      (await this.transport.execRetrying(environScript(job.pid), { timeoutMs: 30_000, what: 'reading the server environment' })).stdout,
    );
    // /proc/PID/environ is what the server really runs with; where it is unreadable, what we asked for.
    const env = Object.keys(remoteEnv).length > 0 ? remoteEnv : specEnv;
    return {
      baseUrl: ready.baseUrl,
      pid: job.pid,
      logPath: spec.logPath,
      command,
      env,
      template: { command: spec.command, env: templatedEnv(env, spec.env) },
      ready,
      exited,
      logTail: async (lines) => readLastLines(spec.logPath, lines),
      stop: live.stop,
    };
  }

  /**
   * Poll the job until it ends, appending its log to logPath; resolves with how it ended. A host unreachable for
   * the whole reconnect window counts as an end (state unknown): the trial fails, and the host's watchdog stops
   * the server once our heartbeats are missing long enough.
   */
  private async watch(job: RemoteJob, logPath: string, signal: AbortSignal): Promise<ExitInfo> {
    for (;;) {
      let polled;
      try {
        polled = await job.poll(signal);
      } catch (error) {
        this.log(`${(error as Error).message}; treating the server as gone`);
        return { code: null, signal: null };
      }
      const { state, logBytes } = polled;
      if (logBytes.length > 0) appendFileSync(logPath, logBytes);
      if (state.kind === 'exited') return { code: state.code, signal: null };
      if (state.kind === 'gone' || state.kind === 'missing') return { code: null, signal: 'SIGTERM' };
      if (signal.aborted) return { code: null, signal: null };
      await delay(WATCH_INTERVAL_MS, undefined, { signal }).catch(() => undefined);
    }
  }

  /**
   * Stop and remove the jobs (servers, load clients) that a killed runner of the same part of the run left on the
   * host (same jobTag), instead of leaving them to hold the GPU until their watchdog's timeout.
   */
  stopLeftovers(): Promise<LeftoverJob[] | undefined> {
    const tag = this.jobTag;
    if (tag === undefined) return Promise.resolve(undefined);
    this.leftovers ??= (async () => {
      await this.connect();
      const listing = await this.transport.execRetrying(taggedJobsScript(this.remoteDir, tag), { timeoutMs: 30_000, what: 'listing leftover jobs' });
      const stopped: LeftoverJob[] = [];
      for (const line of listing.stdout.toString('utf8').split('\n').filter(Boolean)) {
        const [dir = '', pid = ''] = line.split('\t');
        await this.transport.execRetrying(stopScript(dir, STOP_GRACE_S), { timeoutMs: (STOP_GRACE_S + 15) * 1000, what: `stopping the job in ${dir}` });
        await this.transport.execRetrying(removeJobScript(dir), { timeoutMs: 30_000, what: `removing ${dir}` });
        this.log(`stopped ${dir}, left running by an earlier runner of this run that was killed`);
        stopped.push({ dir, ...(/^\d+$/.test(pid) && { pid: Number(pid) }) });
      }
      return stopped;
    })();
    return this.leftovers;
  }

  async bench(options: BenchOptions): Promise<BenchResult> {
    if (this.config.client === 'local') return runBenchmark(options);
    return this.benchOnHost(options);
  }

  /**
   * `servelab bench` on the host against the server's own port, detached like a server so a dropped connection
   * does not end the measurement; Ctrl-C (abort) sends it SIGINT so it writes what it measured.
   */
  private async benchOnHost(options: BenchOptions): Promise<BenchResult> {
    await this.connect();
    const localPort = Number(new URL(options.baseUrl).port);
    const remote = this.remoteEndpoints.get(localPort);
    if (remote === undefined) {
      throw new UserError(
        `client: remote needs a server launched by this executor, but ${options.baseUrl} is not one`,
        'launch the server through the ssh executor, or set client: local',
      );
    }
    const dir = `${this.remoteDir.replace(/\/+$/, '')}/${jobName('bench', this.jobTag)}`;
    const servelab = (this.config.remoteServelab ?? 'servelab').trim().split(/\s+/);
    const job = await RemoteJob.start(
      this.transport,
      {
        dir,
        command: [...servelab, ...benchArgv(options, remoteBaseUrl(options.baseUrl, remote), 'result.json')],
        env: {},
        cwd: dir,
        heartbeatTimeoutMinutes: HEARTBEAT_TIMEOUT_MIN,
      },
      'the load client (servelab bench)',
    );
    const interrupt = () => {
      void this.transport.execRetrying(`kill -INT -${job.pgid} 2>/dev/null; exit 0`, { timeoutMs: 15_000, what: 'interrupting the load client' });
    };
    options.signal?.addEventListener('abort', interrupt, { once: true });
    let output = '';
    try {
      for (;;) {
        const { state, logBytes } = await job.poll();
        output = (output + logBytes.toString('utf8')).slice(-8000);
        if (state.kind !== 'alive') break;
        await delay(WATCH_INTERVAL_MS);
      }
    } finally {
      options.signal?.removeEventListener('abort', interrupt);
    }
    const read = await this.transport.execRetrying(`cat ${remotePathWord(dir)}/result.json 2>/dev/null; exit 0`, {
      timeoutMs: 60_000,
      what: 'reading the load result',
    });
    const result = parseBenchResult(read.stdout.toString('utf8'));
    if (result) await job.remove();
    if (!result) {
      const last = output.trim().split('\n').slice(-5).join(' | ');
      throw new UserError(
        `servelab bench on ${this.hostLabel} produced no result: ${last || 'no output'}`,
        `check that \`${shellQuote(this.config.remoteServelab ?? 'servelab')} --version\` works on ${this.hostLabel} (remoteServelab: in executor:)`,
      );
    }
    return result;
  }

  private async hostPorts(): Promise<HostPorts> {
    const listing = await this.transport.execRetrying(PORTS_SCRIPT, { timeoutMs: 30_000, what: 'listing the ports in use' });
    return parseHostPorts(listing.stdout.toString('utf8'));
  }

  /** As locally (see port-range.ts): a port no socket holds, outside the host's ephemeral range. */
  private async freeRemotePort(requested: PortRange | undefined): Promise<number> {
    const ports = await this.hostPorts();
    return pickFreePort(ports.inUse, Math.random, serverPortRange(ports.ephemeral, requested));
  }

  /** As for a local launch: a fixed port held by another server would have us measure that server. */
  private async assertRemotePortFree(port: number): Promise<void> {
    if (!(await this.hostPorts()).listening.has(port)) return;
    throw new UserError(
      `port ${port} is already in use on ${this.hostLabel}`,
      `stop the server holding it (\`ss -ltnp\` on ${this.hostLabel}), or choose another port (port:, or {port} in the command for a free one)`,
    );
  }

  /** As for a local launch: the server answering on the port must be of the job's process group. */
  private async listenerMismatch(port: number, pgid: number): Promise<{ message: string; hint: string } | undefined> {
    // A host that cannot be asked now cannot tell either: the check passes, as where /proc is unreadable.
    const reply = await this.transport
      .execRetrying(listenerOwnerScript(port, pgid), { timeoutMs: 30_000, what: 'checking who listens on the port' })
      .catch(() => undefined);
    const other = reply && parseListenerOwner(reply.stdout.toString('utf8'));
    if (!other || isPortProxy(other)) return undefined;
    return {
      message: `port ${port} on ${this.hostLabel} is served by ${describeOwner(other)}, not by the launched server (process group ${pgid})`,
      hint: `another server took the port: stop it, or choose another port (port:, or {port} in the command for a free one)`,
    };
  }

  private updateExitHooks(): void {
    const want = this.live.size > 0;
    const have = process.listeners('exit').includes(this.onExit);
    if (want && !have) {
      process.on('exit', this.onExit);
      process.on('SIGINT', this.onSignal);
      process.on('SIGTERM', this.onSignal);
    } else if (!want && have) {
      process.off('exit', this.onExit);
      process.off('SIGINT', this.onSignal);
      process.off('SIGTERM', this.onSignal);
    }
  }

  async close(): Promise<void> {
    const results = await Promise.allSettled([...this.live].map((server) => server.stop()));
    this.transport.close();
    const failed = results.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/** Unique, sortable job directory name, with the executor's tag (see SshExecutorContext.jobTag). */
function jobName(kind: string, tag: string | undefined): string {
  return `${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}-${tag === undefined ? '' : `${tag}-`}${kind}-${randomBytes(3).toString('hex')}`;
}
