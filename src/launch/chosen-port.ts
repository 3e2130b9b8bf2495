import { NotReadyError } from '../ready/errors.js';
import { UserError } from '../util/errors.js';
import type { LaunchHooks, ServerSpec } from './types.js';

/**
 * The port a server listens on: the fixed one, else a free one when `{port}` says where it goes, else the
 * profile's default. `findFree` knows where the server runs (this machine, an SSH host).
 */
export async function choosePort(spec: ServerSpec, findFree: () => Promise<number>): Promise<{ port: number; fixed: boolean }> {
  if (spec.port !== undefined) return { port: spec.port, fixed: true };
  const mentionsPort = [...spec.command, ...Object.values(spec.env)].some((part) => part.includes('{port}'));
  if (mentionsPort) return { port: await findFree(), fixed: false };
  if (spec.profile.defaultPort !== undefined) return { port: spec.profile.defaultPort, fixed: true };
  throw new UserError(
    `no port for the server: the command has no {port} and profile "${spec.profile.name}" has no default port`,
    'put {port} where the command takes its port (e.g. --port {port}), or pass --port N',
  );
}

const PORT_TAKEN = /EADDRINUSE|address already in use/i;
/** A picked port is free when picked, released, then bound by the server: another process can take it in between. */
const PICKED_PORT_ATTEMPTS = 3;

/** A server that died at start because its port was in use (its log or the failure says so). */
export function portWasTaken(error: unknown): boolean {
  if (!(error instanceof NotReadyError) || (error.kind !== 'fatal-log' && error.kind !== 'process-exited')) return false;
  return PORT_TAKEN.test([error.message, ...(error.logTail ?? [])].join('\n'));
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
