import { closeSync, fstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ReadyResult } from '../ready/types.js';
import { waitForReady } from '../ready/wait.js';
import { messageOf, UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { readLastLines } from '../util/log-tail.js';
import { redactor } from '../util/redact.js';
import { startOnChosenPort } from './chosen-port.js';
import { LogMonitor } from './log-monitor.js';
import { fillSpec, templatedEnv } from './placeholders.js';
import { freePort } from './port.js';
import { assertPortFree, describeOwner, foreignListener } from './port-owner.js';
import { stopGroup } from './process-group.js';
import { failStart, readyOptionsOf } from './ready-gate.js';
import type { ExitInfo, LaunchHooks, RunningServer, ServerSpec } from './types.js';
import { spawnGuarded } from './watchdog.js';

const STOP_GRACE_MS = 10_000;
// After "Traceback" or a similar line, the useful text (the exception) follows: collect it before failing.
const FATAL_SETTLE_MS = 500;

/** The server log, opened for appending; a directory or an unwritable path is a clean error before anything starts. */
function openLog(path: string, exitCode?: (typeof ExitCode)[keyof typeof ExitCode]): number {
  try {
    mkdirSync(dirname(path), { recursive: true });
    return openSync(path, 'a');
  } catch (error) {
    throw new UserError(`cannot write the server log ${path}: ${messageOf(error)}`, 'give --log a file path you can write (not a directory)', exitCode);
  }
}

/** Usage check before anything starts (`launch --log`): the log can be opened for appending. */
export function assertLogWritable(path: string): void {
  closeSync(openLog(path, ExitCode.usage));
}

/** A server launched on this machine: it is stopped when this process dies, unless detached. */
export interface LaunchedServer extends RunningServer {
  /** Let the server outlive this process (`servelab launch --detach`): its watchdog is released. */
  detach(): void;
}

/**
 * Start the server in its own process group, log to spec.logPath, and resolve once it is ready (or throw, group
 * stopped). A watchdog stops the group when this process dies first.
 */
export function launchServer(spec: ServerSpec, hooks: LaunchHooks = {}): Promise<LaunchedServer> {
  const host = spec.host ?? '127.0.0.1';
  return startOnChosenPort(
    spec,
    hooks,
    () => freePort(host, spec.portRange),
    (port, fixed) => launchOnPort(spec, hooks, host, port, fixed),
  );
}

async function launchOnPort(spec: ServerSpec, hooks: LaunchHooks, host: string, port: number, fixed: boolean): Promise<LaunchedServer> {
  if (fixed) await assertPortFree(port, host);
  const filled = fillSpec(spec, { port, host });
  const command = filled.command;
  const env = buildEnv(spec, filled.env);

  const logFd = openLog(spec.logPath);
  writeSync(logFd, `\n--- servelab launch ${new Date().toISOString()}: ${redactor().args(command).join(' ')}\n`);
  const startOffset = fstatSync(logFd).size;
  const startedAt = performance.now();
  // Spawned with its watchdog already in place: stopped if this process dies first (see watchdog.ts); released once
  // the server has exited.
  const guarded = spawnGuarded(command, { env, ...(spec.cwd !== undefined && { cwd: spec.cwd }), logFd, graceMs: STOP_GRACE_MS });
  closeSync(logFd);
  if ('missing' in guarded) {
    throw new UserError(`cannot start "${command[0]}": ${guarded.missing}`, 'check that the command is installed and on PATH (or give its full path)');
  }
  const { child } = guarded;
  if (child.pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve));
    throw new UserError(
      `cannot start "${command[0]}" under /bin/sh: ${messageOf(error)}`,
      'servelab starts local servers through /bin/sh: check that it exists',
    );
  }
  const pid = child.pid;

  const log = new LogMonitor(spec.profile, spec.logPath, startOffset, FATAL_SETTLE_MS);
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      const info = { code, signal };
      log.processExited(info);
      guarded.release();
      resolve(info);
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= stopGroup(pid, STOP_GRACE_MS)
      .then(() => exited)
      .then(() => undefined));

  const baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let ready: ReadyResult;
  try {
    // The pid is reported once it runs the server: a resume checks the identity recorded now (proc-identity.ts).
    await guarded.execed();
    hooks.onSpawn?.(pid);
    ready = await waitForReady({ baseUrl, startedAt, monitor: log, checkListener: () => listenerMismatch(port, pid), ...readyOptionsOf(spec, hooks) });
  } catch (error) {
    return failStart(error, stop, log, fixed ? undefined : { exited });
  }
  log.close();

  return {
    baseUrl,
    pid,
    logPath: spec.logPath,
    command,
    env,
    template: { command: spec.command, env: templatedEnv(env, spec.env) },
    ready,
    exited,
    logTail: async (lines) => readLastLines(spec.logPath, lines),
    stop,
    detach: () => guarded.release(),
  };
}

/** The launched group is `pid`'s (detached: it leads its own group); a listener of another process is an impostor. */
function listenerMismatch(port: number, pid: number): { message: string; hint: string } | undefined {
  const other = foreignListener(port, pid);
  return (
    other && {
      message: `port ${port} is served by ${describeOwner(other)}, not by the launched server (process group ${pid})`,
      hint: 'another server took the port: stop it, or choose another port (--port N, or {port} for a free one)',
    }
  );
}

/** Inherited environment, minus the variables the spec unsets, plus the ones it sets. */
function buildEnv(spec: ServerSpec, specEnv: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  for (const key of spec.unsetEnv ?? []) delete env[key];
  Object.assign(env, specEnv);
  return env;
}
