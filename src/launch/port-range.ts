import { UserError } from '../util/errors.js';

/**
 * Where a server's port is picked. The kernel's ephemeral range is where every outgoing connection (and every bind
 * to port 0) gets its local port, so a port picked free there can be taken by any client's connect() between the
 * pick and the server's bind. Below that range only explicit binds take ports.
 */
export interface PortRange {
  low: number;
  high: number;
}

const LOWEST_SERVER_PORT = 20000;
const HIGHEST_PORT = 65535;
/** Linux's default ephemeral range, assumed where the host's cannot be read. */
const DEFAULT_EPHEMERAL: PortRange = { low: 32768, high: 60999 };
const MIN_SPAN = 1000;

/** `/proc/sys/net/ipv4/ip_local_port_range` text ("32768\t60999"); undefined for anything else. */
export function parseEphemeralRange(text: string): PortRange | undefined {
  const match = /^\s*(\d+)\s+(\d+)\s*$/.exec(text);
  if (!match) return undefined;
  const low = Number(match[1]);
  const high = Number(match[2]);
  return low > 0 && low <= high && high <= HIGHEST_PORT ? { low, high } : undefined;
}

/** `server.portRange` / `--port-range`: "LO-HI", both ends included. */
export const PORT_RANGE_RULE = 'expected a port range "LO-HI" with 1 <= LO <= HI <= 65535, e.g. "20000-20999"';

/** "20000-20999" as a range; undefined for anything else (see PORT_RANGE_RULE). */
export function parsePortRange(text: string): PortRange | undefined {
  const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(text);
  if (!match) return undefined;
  const low = Number(match[1]);
  const high = Number(match[2]);
  return low >= 1 && low <= high && high <= HIGHEST_PORT ? { low, high } : undefined;
}

/**
 * Ports to pick a server's from: the range the user asked for, else below the ephemeral range, else above it,
 * else (no room outside it) anywhere.
 */
export function serverPortRange(ephemeral: PortRange = DEFAULT_EPHEMERAL, requested?: PortRange): PortRange {
  if (requested) return requested;
  if (ephemeral.low - 1 - LOWEST_SERVER_PORT >= MIN_SPAN) return { low: LOWEST_SERVER_PORT, high: ephemeral.low - 1 };
  if (HIGHEST_PORT - ephemeral.high >= MIN_SPAN) return { low: ephemeral.high + 1, high: HIGHEST_PORT };
  return { low: LOWEST_SERVER_PORT, high: HIGHEST_PORT };
}

/** A port of `range` not in `used`, starting at a random point so concurrent callers rarely collide. */
export function pickFreePort(used: ReadonlySet<number>, random: () => number, range: PortRange): number {
  const span = range.high - range.low + 1;
  const start = Math.floor(random() * span);
  for (let step = 0; step < span; step++) {
    const port = range.low + ((start + step) % span);
    if (!used.has(port)) return port;
  }
  throw new UserError(
    `no free port in ${range.low}-${range.high}: every one is in use`,
    'widen the port range (server.portRange, --port-range), or stop the servers holding those ports',
  );
}
