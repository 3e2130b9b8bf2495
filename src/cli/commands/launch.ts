import { dirname, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { parseDurationMs } from '../../config/duration.js';
import { portPlan } from '../../launch/chosen-port.js';
import { configKey, type LaunchFile, loadLaunchFile } from '../../launch/config.js';
import { assertLogWritable, type LaunchedServer, launchServer } from '../../launch/launch.js';
import { assertPortFree } from '../../launch/port-owner.js';
import { type PortRange, parsePortRange } from '../../launch/port-range.js';
import { envNameList, envSchema, portSchema } from '../../launch/server-schema.js';
import type { ServerSpec } from '../../launch/types.js';
import { replayLog } from '../../profiles/replay.js';
import type { ServerProfile } from '../../profiles/types.js';
import { applyDefinition, inferProfileName, loadUserProfiles, resolveProfile, userProfilesPath } from '../../profiles/user.js';
import { versionNote } from '../../profiles/version-note.js';
import { openHistory, previousStartupOptions, recordStartupOutcome } from '../../ready/history.js';
import { createProgressReporter } from '../../ready/progress.js';
import { describeReady, failureJson, printLogTail } from '../../ready/report.js';
import { defaultStorePath } from '../../store/db.js';
import { DEFAULT_READY_TIMEOUT, DEFAULT_READY_TIMEOUT_MS } from '../../util/defaults.js';
import { isUserError, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { formatSeconds } from '../../util/format.js';
import { readLastLines } from '../../util/log-tail.js';
import { redactor } from '../../util/redact.js';
import { terminalText } from '../../util/terminal-text.js';

interface LaunchFlags {
  config?: string;
  profile?: string;
  profiles?: string;
  env: string[];
  unsetEnv: string[];
  log?: string;
  host?: string;
  port?: string;
  portRange?: string;
  timeout?: string;
  verify?: boolean;
  model?: string;
  json?: boolean;
  store?: string;
  exitWhenReady?: boolean;
  detach?: boolean;
}

const collect = (value: string, previous: string[]) => [...previous, value];

export function registerLaunch(program: Command): void {
  program
    .command('launch')
    .description('Start an inference server, watch its log, and gate on real readiness')
    .argument('[command...]', 'server command after "--"; {port} and {host} are substituted')
    .option(
      '--config <file>',
      "server YAML: an experiment file's server keys (command, env, unsetEnv, cwd, port, portRange, readyTimeout, verifyServing, model) plus profile (name or {extends, ...}), host, log",
    )
    .option('--profile <name>', 'server profile (default: guessed from the command: vllm, sglang, tgi, llamacpp, ollama, simulator, else openai)')
    .option('--profiles <file>', 'YAML file of user profiles (default: $SERVELAB_PROFILES or ~/.servelab/profiles.yaml)')
    .option('--env <K=V>', 'set a variable for the server (repeatable)', collect, [])
    .option('--unset-env <K>', 'remove an inherited variable (repeatable)', collect, [])
    .option('--log <file>', 'append the server output here (default: <store dir>/logs/<profile>-<time>.log)')
    .option('--host <host>', 'host the server listens on, for {host} and the URL (default 127.0.0.1)')
    .option('--port <n>', "fixed port (default: a free one substituted for {port}, else the profile's usual port)")
    .option('--port-range <lo-hi>', 'pick the free port for {port} in this range, e.g. 20000-20999 (default: below the ephemeral range)')
    .option('--timeout <duration>', `readiness timeout: 90s, 15m, 1h, 500ms (a bare number is seconds; default ${DEFAULT_READY_TIMEOUT})`)
    .option('--verify', 'check /v1/models and one tiny generation after health (default for OpenAI-compatible profiles)')
    .option('--no-verify', 'only check the health endpoint (skip /v1/models and the one-token generation)')
    .option('--model <name>', 'model for the generation check (default: the first one /v1/models lists)')
    .option('--json', 'print the ready server (URL, pid, log, phases) or the failure as JSON on stdout')
    .option('--store <path>', 'store with startup history (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .option('--exit-when-ready', 'stop the server and exit 0 once it is ready (does this config start, and how fast?)')
    .option('--detach', 'exit once ready and leave the server running (stop it later with: kill -TERM -- -PID)')
    .addHelpText(
      'after',
      `
By default the server stays in the foreground once ready: Ctrl-C or SIGTERM stops its whole process group
(SIGTERM, then SIGKILL after 10 s). While starting, a process exit, or a fatal log line (CUDA out of memory,
Traceback, Address already in use, NCCL error...) fails at once with the last 30 log lines.
Exit codes: 0 ready (or stopped by you after ready), 2 bad usage, 3 readiness timeout, 4 server died or
logged a fatal error (also after ready, in the foreground), 1 wrong answer, 130 interrupted before ready.

Examples:
  servelab launch -- vllm serve Qwen/Qwen3-8B --port {port}
  servelab launch --env NCCL_PROTO=LL --json --detach -- python -m sglang.launch_server --model-path M --port {port}
  servelab launch --config server.yaml --exit-when-ready`,
    )
    .action(async (commandArgs: string[], flags: LaunchFlags) => {
      if (flags.detach && flags.exitWhenReady) throw new UserError('--detach and --exit-when-ready contradict each other', 'pick one', ExitCode.usage);
      const config: Partial<LaunchFile> = flags.config ? loadLaunchFile(flags.config) : {};
      const command = commandArgs.length > 0 ? commandArgs : config.command;
      if (!command?.length)
        throw new UserError('no server command', 'give it after "--" (servelab launch -- vllm serve M --port {port}) or in --config', ExitCode.usage);
      const env = { ...config.env, ...parseEnvFlags(flags.env) };
      const unsetEnv = [...(config.unsetEnv ?? []), ...parseUnsetFlags(flags.unsetEnv)];
      const profile = chooseProfile(flags, config, command);
      const storePath = defaultStorePath(flags.store);
      const logPath = resolve(
        flags.log ?? config.log ?? join(dirname(storePath), 'logs', `${profile.name}-${new Date().toISOString().replace(/[:.]/g, '-')}.log`),
      );
      const host = flags.host ?? config.host;
      const verify = flags.verify ?? config.verifyServing;
      const model = flags.model ?? config.model;
      const spec: ServerSpec = {
        command,
        env,
        unsetEnv,
        profile,
        logPath,
        readyTimeoutMs: flags.timeout !== undefined ? parseDurationMs(flags.timeout) : (config.readyTimeout ?? DEFAULT_READY_TIMEOUT_MS),
        ...(config.cwd && { cwd: config.cwd }),
        ...(host && { host }),
        ...portsOf(flags, config),
        ...(verify !== undefined && { verifyServing: verify }),
        ...(model && { model }),
      };
      // Usage errors exit 2 before anything starts: a contradictory or missing port, a fixed port someone holds.
      const plan = portPlan(spec);
      if ('fixed' in plan) await asUsageError(assertPortFree(plan.fixed, host ?? '127.0.0.1'));
      if (host === undefined) assertLogWritable(logPath);

      const key = configKey({ command, env, unsetEnv, profile: profile.name });
      const db = openHistory(flags.store);
      const previous = previousStartupOptions(db, key);
      const progress = createProgressReporter();
      process.stderr.write(`servelab: starting ${profile.name} server, log: ${logPath}\n`);

      // Signals: before ready they abort the launch (which stops the group); after ready they stop the server.
      const interrupt = new AbortController();
      let server: LaunchedServer | undefined;
      let stopRequested = false;
      const onSignal = () => {
        stopRequested = true;
        interrupt.abort();
        void server?.stop();
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      const startedAt = new Date();
      try {
        try {
          server = await launchServer(spec, {
            onProgress: progress.report,
            signal: interrupt.signal,
            onNote: (line) => process.stderr.write(terminalText(`servelab: ${line}\n`)),
            ...previous,
          });
        } catch (error) {
          progress.finish();
          if (db) recordStartupOutcome(db, key, startedAt, error);
          printLogTail(error, logPath);
          noteNewerEngine(profile, logPath);
          if (flags.json) process.stdout.write(`${JSON.stringify({ ...failureJson(error), logPath, configKey: key })}\n`);
          throw error;
        }
        progress.finish();
        const summary = { ok: true, ...server.ready, pid: server.pid, logPath, command: redactor().args(server.command), configKey: key };
        process.stdout.write(flags.json ? `${JSON.stringify(summary)}\n` : `${terminalText(describeReady(server.ready))}\n`);
        noteNewerEngine(profile, logPath);
        if (db) recordStartupOutcome(db, key, startedAt, server.ready);

        if (flags.detach) {
          process.stderr.write(`servelab: left running as process group ${server.pid}; stop it with: kill -TERM -- -${server.pid}\n`);
          // The child handle would keep this process alive; the server is in its own group and logs to a file.
          server.detach();
          process.exit(ExitCode.ok);
        }
        if (flags.exitWhenReady || stopRequested) {
          await server.stop();
          return;
        }
        process.stderr.write('servelab: serving; Ctrl-C stops the server\n');
        const exit = await server.exited;
        if (stopRequested) {
          await server.stop();
          return;
        }
        const tail = await server.logTail(30);
        process.stderr.write(
          `--- last ${tail.length} lines of the server log (${logPath}) ---\n${redactor()
            .args(tail)
            .map((line) => `  ${line}\n`)
            .join('')}---\n`,
        );
        await server.stop();
        const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
        throw new UserError(
          `server ${how} after ${formatSeconds(Date.now() - startedAt.getTime())} (it had been ready)`,
          'read the log tail above',
          ExitCode.serverDied,
        );
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        db?.close();
      }
    });
}

function chooseProfile(flags: LaunchFlags, config: Partial<LaunchFile>, command: string[]): ServerProfile {
  const userProfiles = loadUserProfiles(userProfilesPath(flags.profiles));
  if (flags.profile) return resolveProfile(flags.profile, userProfiles);
  if (typeof config.profile === 'object') return applyDefinition(`custom(${config.profile.extends ?? 'openai'})`, config.profile, userProfiles);
  return resolveProfile(config.profile ?? inferProfileName(command), userProfiles);
}

/** --env NAME=VALUE, names by the server file's `env:` rule (server-schema.ts): "--env A=B=C" sets A to "B=C". */
function parseEnvFlags(pairs: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw new UserError(`--env "${pair}" is not NAME=VALUE`, 'write it like --env NCCL_PROTO=LL', ExitCode.usage);
    const name = pair.slice(0, at);
    if (!envSchema.safeParse({ [name]: '' }).success)
      throw new UserError(
        `--env "${pair}": "${name}" is not an environment variable name`,
        'use letters, digits and "_", not starting with a digit',
        ExitCode.usage,
      );
    env[name] = pair.slice(at + 1);
  }
  return env;
}

function parseUnsetFlags(names: string[]): string[] {
  for (const name of names) {
    if (!envNameList.safeParse([name]).success)
      throw new UserError(
        `--unset-env "${name}" is not an environment variable name`,
        'use letters, digits and "_", not starting with a digit',
        ExitCode.usage,
      );
  }
  return names;
}

/** The port settings, flags winning over the file: a --port drops the file's portRange and --port-range its port. */
function portsOf(flags: LaunchFlags, config: Partial<LaunchFile>): Pick<ServerSpec, 'port' | 'portRange'> {
  const port = flags.port !== undefined ? parsePort(flags.port) : flags.portRange === undefined ? config.port : undefined;
  const portRange = flags.portRange !== undefined ? parsePortRangeFlag(flags.portRange) : flags.port === undefined ? config.portRange : undefined;
  return { ...(port !== undefined && { port }), ...(portRange && { portRange }) };
}

/** --port by the server file's own `port:` rule (launch/server-schema.ts), so flag and file accept the same ports. */
function parsePort(text: string): number {
  const port = portSchema.safeParse(text.trim() === '' ? Number.NaN : Number(text));
  if (!port.success) throw new UserError(`--port "${text}" is not a port number`, 'give an integer 1-65535', ExitCode.usage);
  return port.data;
}

/** An engine newer than the profile was checked against (the version its own log prints) may log lines we miss. */
function noteNewerEngine(profile: ServerProfile, logPath: string): void {
  const note = versionNote(profile, replayLog(profile, readLastLines(logPath, 10_000, 1024 * 1024)).versions);
  if (note) process.stderr.write(`servelab: note: ${note}\n`);
}

function parsePortRangeFlag(text: string): PortRange {
  const range = parsePortRange(text);
  if (!range)
    throw new UserError(`--port-range "${text}" is not a port range`, `write it as LO-HI with 1 <= LO <= HI <= 65535, e.g. 20000-20999`, ExitCode.usage);
  return range;
}

/** A check whose failure means the command line (or file) asks for something impossible: exit 2, not 1. */
async function asUsageError(check: Promise<void>): Promise<void> {
  try {
    await check;
  } catch (error) {
    throw isUserError(error) ? new UserError(error.message, error.hint, ExitCode.usage) : error;
  }
}
