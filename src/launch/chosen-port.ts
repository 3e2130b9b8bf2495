import { PORT_IN_USE } from '../profiles/builtin.js';
import { NotReadyError } from '../ready/errors.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import type { LaunchHooks, ServerSpec } from './types.js';

/** Whether the command or an env value says where a picked port goes. */
export function mentionsPort(spec: Pick<ServerSpec, 'command' | 'env'>): boolean {
  return [...spec.command, ...Object.values(spec.env)].some((part) => part.includes('{port}'));
}

/**
 * How the server's port is found, decided from the spec alone (so a launcher can refuse a contradiction before
 * anything starts): the fixed port, else a free one when `{port}` says where it goes, else the profile's default.
 */
export function portPlan(spec: Pick<ServerSpec, 'command' | 'env' | 'port' | 'portRange' | 'profile'>): { fixed: number } | { pick: true } {
  if (spec.port !== undefined && spec.portRange !== undefined)
    throw new UserError('a fixed port and a port range contradict each other', 'give one of them (--port N or --port-range LO-HI)', ExitCode.usage);
  if (spec.port !== undefined) return { fixed: spec.port };
  if (mentionsPort(spec)) return { pick: true };
  if (spec.portRange !== undefined)
    throw new UserError(
      `a port range (${spec.portRange.low}-${spec.portRange.high}) was given, but the command has no {port} to put the picked port in`,
      'put {port} where the command takes its port (e.g. --port {port})',
      ExitCode.usage,
    );
  if (spec.profile.defaultPort !== undefined) return { fixed: spec.profile.defaultPort };
  throw new UserError(
    `no port for the server: the command has no {port} and profile "${spec.profile.name}" has no default port`,
    'put {port} where the command takes its port (e.g. --port {port}), or pass --port N',
    ExitCode.usage,
  );
}

/** The port a server listens on (see portPlan). `findFree` knows where the server runs (this machine, an SSH host). */
export async function choosePort(spec: ServerSpec, findFree: () => Promise<number>): Promise<{ port: number; fixed: boolean }> {
  const plan = portPlan(spec);
  return 'fixed' in plan ? { port: plan.fixed, fixed: true } : { port: await findFree(), fixed: false };
}

/** A picked port is free when picked, released, then bound by the server: another process can take it in between. */
const PICKED_PORT_ATTEMPTS = 3;

/**
 * A server that died at start because its port was in use (its log or the failure says so), also when another
 * process answered on the port before ours failed its bind (`wrong-server` with our server's EADDRINUSE in the tail:
 * ready-gate.ts failStart waits for it). A foreign listener without that word fails the start: it may be a server
 * our own command left running in another session, which a new attempt would only start again.
 */
export function portWasTaken(error: unknown): boolean {
  if (!(error instanceof NotReadyError) || !['fatal-log', 'process-exited', 'wrong-server'].includes(error.kind)) return false;
  return PORT_IN_USE.test([error.message, ...(error.logTail ?? [])].join('\n'));
}

/**
 * Start a server on its chosen port; when servelab picked that port and the server died because something took it
 * first, pick another and start again (a fixed port would only be taken again). Each attempt stops its own server.
 */
export async function startOnChosenPort<T>(
  spec: ServerSpec,
  hooks: LaunchHooks,
  findFree: () => Promise<number>,
  start: (port: number, fixed: boolean) => Promise<T>,
): Promise<T> {
  let { port, fixed } = await choosePort(spec, findFree);
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start(port, fixed);
    } catch (error) {
      if (fixed || attempt >= PICKED_PORT_ATTEMPTS || hooks.signal?.aborted || !portWasTaken(error)) throw error;
      hooks.onNote?.(`port ${port} was taken before the server could bind it; starting again on another port`);
      port = await findFree();
    }
  }
}
