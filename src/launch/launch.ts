import { spawn } from 'node:child_process';
import { closeSync, fstatSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { classifyLogLine } from '../profiles/classify.js';
import type { ReadyResult } from '../ready/types.js';
import { waitForReady, type MonitorEvent, type ServerMonitor } from '../ready/wait.js';
import { UserError, messageOf } from '../util/errors.js';
import { readLastLines } from '../util/log-tail.js';
import { redactor } from '../util/redact.js';
import { LogFollower } from './log-follower.js';
import { freePort } from './port.js';
import { stopGroup } from './process-group.js';
import { failStart, readyOptionsOf } from './ready-gate.js';
import type { ExitInfo, LaunchHooks, RunningServer, ServerSpec } from './types.js';

const STOP_GRACE_MS = 10_000;
// After "Traceback" or a similar line, the useful text (the exception) follows: collect it before failing.
const FATAL_SETTLE_MS = 500;

/** The server log, opened for appending; a directory or an unwritable path is a clean error before anything starts. */
function openLog(path: string): number {
  try {
    mkdirSync(dirname(path), { recursive: true });
    return openSync(path, 'a');
  } catch (error) {
    throw new UserError(`cannot write the server log ${path}: ${messageOf(error)}`, 'give --log a file path you can write (not a directory)');
  }
}

/** Start the server in its own process group, log to spec.logPath, and resolve once it is ready (or throw, group stopped). */
export async function launchServer(spec: ServerSpec, hooks: LaunchHooks = {}): Promise<RunningServer> {
  const host = spec.host ?? '127.0.0.1';
  const port = await choosePort(spec, host);
  const substitute = (text: string) => text.replaceAll('{port}', String(port)).replaceAll('{host}', host);
  const command = spec.command.map(substitute);
  const env = buildEnv(spec, substitute);

  const logFd = openLog(spec.logPath);
  writeSync(logFd, `\n--- servelab launch ${new Date().toISOString()}: ${redactor().args(command).join(' ')}\n`);
  const startOffset = fstatSync(logFd).size;
  const startedAt = performance.now();
  const child = spawn(command[0]!, command.slice(1), { detached: true, stdio: ['ignore', logFd, logFd], env, cwd: spec.cwd });
  closeSync(logFd);
  const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
  if (child.pid === undefined) {
    const error = await spawnError;
    throw new UserError(`cannot start "${command[0]}": ${messageOf(error)}`, 'check that the command is installed and on PATH (or give its full path)');
  }
  const pid = child.pid;

  const listeners = new Set<(event: MonitorEvent) => void>();
  const publish = (event: MonitorEvent) => listeners.forEach((listener) => listener(event));
  let lastPhase: string | undefined;
  let fatal: { name: string; hint: string; line: string; rank: number } | undefined;
  let exitedYet = false;
  const describe = (found: { name: string; hint: string; line: string }) => ({ name: found.name, hint: found.hint, line: found.line });
  const follower = new LogFollower(spec.logPath, startOffset, (line) => {
    const found = classifyLogLine(spec.profile, line);
    if (found?.kind === 'phase' && found.name !== lastPhase) {
      lastPhase = found.name;
      publish({ type: 'phase', name: found.name });
    } else if (found?.kind === 'fatal') {
      // The first fatal line starts a short settle time: the exception text that follows "Traceback" often names
      // the real cause (a more specific pattern replaces it), and a crashing process exits meanwhile, so it is
      // reported with its exit code. A server that stays up after a fatal line (OOM, NCCL hang) is failed here.
      if (!fatal) setTimeout(() => exitedYet || publish({ type: 'fatal', ...describe(fatal!) }), FATAL_SETTLE_MS).unref();
      if (!fatal || found.rank < fatal.rank) fatal = { name: found.name, hint: found.hint, line, rank: found.rank };
    }
  });
  const exited = new Promise<ExitInfo>((resolve) => {
    child.once('exit', (code, signal) => {
      exitedYet = true;
      follower.drain();
      const info = { code, signal };
      publish({ type: 'exit', info, ...(fatal && { fatal: describe(fatal) }) });
      resolve(info);
    });
  });
  const monitor: ServerMonitor = {
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };

  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= stopGroup(pid, STOP_GRACE_MS).then(() => exited).then(() => undefined));

  const baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  let ready: ReadyResult;
  try {
    hooks.onSpawn?.(pid);
    ready = await waitForReady({ baseUrl, startedAt, monitor, ...readyOptionsOf(spec, hooks) });
  } catch (error) {
    return failStart(error, stop, follower);
  }
  follower.close();

  return {
    baseUrl,
    pid,
    logPath: spec.logPath,
    command,
    env,
    ready,
    exited,
    logTail: async (lines) => readLastLines(spec.logPath, lines),
    stop,
  };
}

async function choosePort(spec: ServerSpec, host: string): Promise<number> {
  if (spec.port !== undefined) return spec.port;
  const mentionsPort = [...spec.command, ...Object.values(spec.env)].some((part) => part.includes('{port}'));
  if (mentionsPort) return freePort(host);
  if (spec.profile.defaultPort !== undefined) return spec.profile.defaultPort;
  throw new UserError(
    `no port for the server: the command has no {port} and profile "${spec.profile.name}" has no default port`,
    'put {port} where the command takes its port (e.g. --port {port}), or pass --port N',
  );
}

/** Inherited environment, minus the variables the spec unsets, plus the ones it sets. */
function buildEnv(spec: ServerSpec, substitute: (text: string) => string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value;
  for (const key of spec.unsetEnv ?? []) delete env[key];
  for (const [key, value] of Object.entries(spec.env)) env[key] = substitute(value);
  return env;
}
