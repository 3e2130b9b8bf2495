import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';
import { UserError } from '../util/errors.js';

/** A process holding a socket; cmdline is undefined where /proc does not let us read it. */
export interface SocketOwner {
  pid: number;
  processGroup?: number;
  cmdline?: string;
}

const LISTEN_STATE = '0A';
const MAX_CMDLINE = 200;

/** Inodes of the sockets listening on `port` in /proc/net/tcp{,6} text (local address "0100007F:1F90", state 0A). */
export function listeningInodes(procNetTcp: string, port: number): Set<string> {
  const inodes = new Set<string>();
  for (const line of procNetTcp.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10 || fields[3] !== LISTEN_STATE) continue;
    if (Number.parseInt(fields[1]!.split(':').pop() ?? '', 16) === port && fields[9] !== '0') inodes.add(fields[9]!);
  }
  return inodes;
}

/** /proc/net/tcp and tcp6 of this machine; undefined where there is no /proc (macOS). */
export function readProcNetTcp(): string | undefined {
  const parts: string[] = [];
  for (const path of ['/proc/net/tcp', '/proc/net/tcp6']) {
    try {
      parts.push(readFileSync(path, 'utf8'));
    } catch {
      // tcp6 is absent without IPv6.
    }
  }
  return parts.length > 0 ? parts.join('\n') : undefined;
}

/** The process group of `pid` (field 5 of /proc/PID/stat, after the parenthesised command name). */
function processGroupOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[2]);
  } catch {
    return undefined;
  }
}

function cmdlineOf(pid: number): string | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return text.length > MAX_CMDLINE ? `${text.slice(0, MAX_CMDLINE)}…` : text || undefined;
  } catch {
    return undefined;
  }
}

/** Processes whose open files include one of the sockets; processes of other users are unreadable and skipped. */
function ownersOf(inodes: Set<string>): SocketOwner[] {
  const wanted = new Set([...inodes].map((inode) => `socket:[${inode}]`));
  const owners: SocketOwner[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      try {
        return wanted.has(readlinkSync(`/proc/${entry}/fd/${fd}`));
      } catch {
        return false;
      }
    });
    if (!holds) continue;
    const pid = Number(entry);
    const processGroup = processGroupOf(pid);
    const cmdline = cmdlineOf(pid);
    owners.push({ pid, ...(processGroup !== undefined && { processGroup }), ...(cmdline !== undefined && { cmdline }) });
  }
  return owners;
}

/** Who listens on `port` on this machine: undefined when nobody does (or /proc cannot say), [] when the owner is unreadable. */
function portListeners(port: number): SocketOwner[] | undefined {
  const table = readProcNetTcp();
  if (table === undefined) return undefined;
  const inodes = listeningInodes(table, port);
  return inodes.size === 0 ? undefined : ownersOf(inodes);
}

export function describeOwner(owner: SocketOwner): string {
  return `pid ${owner.pid}${owner.cmdline ? ` (${owner.cmdline})` : ''}`;
}

/**
 * A fixed port must be free before the server starts: otherwise the readiness probes would reach whoever holds it
 * and measure that server instead. /proc names the holder; elsewhere a trial bind tells whether the port is taken.
 */
export async function assertPortFree(port: number, host: string): Promise<void> {
  const table = readProcNetTcp();
  if (table === undefined) {
    if (await bindFails(port, host)) throw portInUse(port, undefined);
    return;
  }
  const inodes = listeningInodes(table, port);
  if (inodes.size > 0) throw portInUse(port, ownersOf(inodes)[0]);
}

function portInUse(port: number, holder: SocketOwner | undefined): UserError {
  return new UserError(
    `port ${port} is already in use${holder ? ` by ${describeOwner(holder)}` : ''}`,
    'stop that server, or choose another port (--port N, or {port} in the command for a free one)',
  );
}

function bindFails(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    server.listen(port, host, () => server.close(() => resolve(false)));
  });
}

// Container runtimes publish a container's port through a proxy process of their own, outside the launched group.
const PORT_PROXY = /^(\S*\/)?(docker-proxy|rootlessport|rootlesskit|slirp4netns|pasta)(\s|$)/;

/** A container runtime's port proxy: it forwards to the launched container, so it cannot tell us whom we reach. */
export function isPortProxy(owner: SocketOwner): boolean {
  return owner.cmdline !== undefined && PORT_PROXY.test(owner.cmdline);
}

/**
 * Whether the server answering on `port` is the one we launched (process group `group`). Only a listener that /proc
 * shows to belong to another process is a mismatch; an unreadable owner (another user's process), a container
 * runtime's port proxy, or a port not in /proc (NAT, no /proc) cannot be judged and passes.
 */
export function foreignListener(port: number, group: number): SocketOwner | undefined {
  const listeners = portListeners(port);
  if (!listeners || listeners.length === 0) return undefined;
  if (listeners.some((owner) => owner.processGroup === group || isPortProxy(owner))) return undefined;
  return listeners[0];
}
