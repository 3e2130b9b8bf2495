import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { collectMachineFacts, fingerprintOf, type MachineFacts } from '../../fingerprint/collect.js';
import { DEFAULT_ENV_PATTERNS } from '../../fingerprint/env.js';
import type { Fingerprint } from '../../fingerprint/types.js';
import { configKey } from '../../launch/config.js';
import type { RunningServer } from '../../launch/types.js';
import { describeExit, waitUntilAnswering } from '../../load/liveness.js';
import { BUILTIN_PROFILES } from '../../profiles/builtin.js';
import type { ServerProfile } from '../../profiles/types.js';
import { previousStartupOptions } from '../../ready/history.js';
import { storeFault } from '../../store/fault.js';
import { messageOf, UserError } from '../../util/errors.js';
import { formatSeconds } from '../../util/format.js';
import { readLastLines } from '../../util/log-tail.js';
import { processIdentity } from '../../util/proc-identity.js';
import { redactor } from '../../util/redact.js';
import type { ResolvedVariant } from '../spec/types.js';
import type { RunContext } from './context.js';

/** A server of this runner, with how it ended once it did. */
export interface ServerHandle {
  running: RunningServer;
  /** The profile it was started with, looked up (and checked) once at its start: trials and passes read it here. */
  profile: ServerProfile;
  rowId: number;
  exit?: string;
}

/** How long a server that stopped answering (an SSH forward being restored, a stall) gets to answer again. */
const RECOVER_MS = 60_000;

/** Start, re-verify and stop the servers of one run, each with its row in the store (through the journal). */
export class ServerLifecycle {
  /** Server starts beyond the plan's: restarts after a server died during a trial. */
  private restarts = 0;

  constructor(private readonly context: RunContext) {}

  /** Launch a server config; the launch pipeline itself starts again when a port it picked was taken before the bind. */
  async start(variant: ResolvedVariant, label: string, unplanned = false): Promise<ServerHandle> {
    const { db, runId, journal, executor, log } = this.context;
    const config = variant.server;
    const profile = BUILTIN_PROFILES[config.profile];
    if (!profile) throw new UserError(`unknown server profile "${config.profile}"`, 'use a built-in profile name');
    const logDir = join(this.context.workDir, `run-${runId}`);
    mkdirSync(logDir, { recursive: true });
    const logPath = join(logDir, `${variant.serverKey}-${Date.now()}.log`);
    // Startup history is shared with `servelab launch`: same key for the same command, env changes and profile.
    const startupKey = configKey({ command: config.command, env: config.env, unsetEnv: config.unsetEnv, profile: config.profile });
    const previous = previousStartupOptions(db, startupKey);
    const predictedReadyMs = previous.previousReadyMs;
    const rowId = journal.serverStarting({
      serverKey: variant.serverKey,
      label,
      host: executor.hostLabel,
      logPath,
      ...(predictedReadyMs !== undefined && { predictedReadyMs }),
      unplanned,
      ...(this.context.lane && { lane: this.context.lane.index }),
    });
    const startedAt = new Date();
    log(`starting server for ${label} (log: ${logPath})`);
    const writes = new GuardedWrites(this.context.signal);
    try {
      const running = await executor.launch(
        {
          command: config.command,
          env: config.env,
          unsetEnv: config.unsetEnv,
          ...(config.cwd !== undefined && { cwd: config.cwd }),
          ...(config.port !== undefined && { port: config.port }),
          ...(config.portRange !== undefined && { portRange: config.portRange }),
          profile,
          logPath,
          readyTimeoutMs: config.readyTimeoutMs,
          verifyServing: config.verifyServing,
          ...(config.model !== undefined && { model: config.model }),
        },
        {
          onProgress: writes.guard((progress) =>
            journal.serverUpdate(rowId, {
              phase: progress.phase,
              ...(progress.predictedRemainingMs !== undefined && { predictedReadyMs: progress.elapsedMs + progress.predictedRemainingMs }),
            }),
          ),
          // Recorded at spawn, not at ready: a resumed run must be able to stop a server killed mid-load.
          // With its start time and command line, so a resume never signals a process that merely reuses the pid.
          onSpawn: writes.guard((pid: number) => {
            const identity = executor.kind === 'local' ? processIdentity(pid) : undefined;
            journal.serverUpdate(rowId, { pid, ...(identity && { pidStart: identity.start, pidCmdline: identity.cmdline }) });
          }),
          signal: writes.signal,
          onNote: log,
          ...previous,
        },
      );
      journal.serverUpdate(rowId, { status: 'ready', phase: 'ready', readyMs: running.ready.elapsedMs });
      journal.startupOutcome(startupKey, startedAt, running.ready);
      log(`server ready in ${formatSeconds(running.ready.elapsedMs)} at ${running.baseUrl}`);
      const handle: ServerHandle = { running, profile, rowId };
      void running.exited.then((info) => (handle.exit = describeExit(info)));
      return handle;
    } catch (launchError) {
      // A failed store write aborted the launch (which stopped the server): that write is the cause to report.
      const error = writes.fault ?? launchError;
      log(`server for ${label} failed to start: ${messageOf(storeFault(error))}\nlast lines of ${logPath}:\n${logTail(logPath)}`);
      if (writes.fault === undefined) {
        journal.serverUpdate(rowId, { status: 'failed', phase: 'failed', message: messageOf(error) });
        journal.startupOutcome(startupKey, startedAt, error);
      }
      throw error;
    }
  }

  /**
   * After an invalid trial: keep the server if it is up and answers (again: an SSH forward is restored after a
   * reconnect), else stop what is left of it and start a fresh one, which counts as a restart.
   */
  async reverify(server: ServerHandle, variant: ResolvedVariant, label: string): Promise<ServerHandle> {
    const { profile } = server;
    const { signal, log } = this.context;
    const answering =
      server.exit === undefined &&
      (await waitUntilAnswering({
        baseUrl: server.running.baseUrl,
        path: profile.livenessPath ?? profile.healthPath,
        timeoutMs: RECOVER_MS,
        exited: server.running.exited,
        signal,
      }));
    signal.throwIfAborted();
    if (answering && server.exit === undefined) {
      log('server is up and answering; measuring the trial again');
      return server;
    }
    const why = server.exit ?? `server did not answer for ${RECOVER_MS / 1000} s`;
    this.context.journal.serverUpdate(server.rowId, { status: 'failed', phase: 'failed', message: `${why} during a trial` });
    await server.running.stop();
    this.restarts += 1;
    log(`${why}; restarting it (unplanned restart ${this.restarts}) and measuring the trial again`);
    return this.start(variant, label, true);
  }

  /**
   * Stop the server and record how it ended. With `failure` (the stretch is failing already), a store write that
   * fails too is dropped, so the first cause is the one reported.
   */
  async stop(server: ServerHandle, failure?: unknown): Promise<void> {
    // Read before stop(): our own stop ends the process too, and that is no death.
    const died = server.exit;
    await server.running.stop();
    try {
      this.context.journal.serverUpdate(
        server.rowId,
        died === undefined ? { status: 'stopped', phase: 'stopped' } : { status: 'failed', phase: 'failed', message: `${died} during a trial` },
      );
    } catch (error) {
      if (failure === undefined) throw error;
    }
  }

  /** What the server runs on, with placeholders as configured ({port} unfilled): the picked port is no property of the environment. */
  /** The machine facts of a server config's fingerprint, gathered while it starts (they need no running server). */
  machineFacts(variant: ResolvedVariant): Promise<MachineFacts> {
    return collectMachineFacts(this.context.executor, variant.server.command);
  }

  fingerprint(server: RunningServer, facts: MachineFacts): Fingerprint {
    const { experiment } = this.context;
    return fingerprintOf(
      facts,
      { ...server.template, ...(server.ready.model !== undefined && { model: server.ready.model }) },
      { envPatterns: [...DEFAULT_ENV_PATTERNS, ...experiment.fingerprint.envPatterns], redactPatterns: experiment.fingerprint.redact },
    );
  }
}

function logTail(logPath: string): string {
  const lines = readLastLines(logPath, 15);
  if (lines.length === 0) return '  (no log written)';
  return redactor()
    .args(lines)
    .map((line) => `  | ${line}`)
    .join('\n');
}

/**
 * Store writes made from launch callbacks (phase, pid). A throw there would escape as an uncaught exception and
 * orphan the server, so the first failure (store locked, disk full, lease lost) is kept and aborts the launch
 * instead, which stops the server; the caller then reports that failure.
 */
class GuardedWrites {
  private readonly controller = new AbortController();
  /** Aborts on the run's signal (Ctrl-C, lease lost) or on the first failed write. */
  readonly signal: AbortSignal;
  fault: unknown;

  constructor(outer: AbortSignal) {
    this.signal = AbortSignal.any([outer, this.controller.signal]);
  }

  guard<A extends unknown[]>(write: (...args: A) => void): (...args: A) => void {
    return (...args) => {
      if (this.fault !== undefined) return;
      try {
        write(...args);
      } catch (error) {
        this.fault = error;
        this.controller.abort();
      }
    };
  }
}
