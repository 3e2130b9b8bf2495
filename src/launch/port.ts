import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { messageOf, UserError } from '../util/errors.js';
import { type PortRange, parseEphemeralRange, pickFreePort, serverPortRange } from './port-range.js';

const BIND_TRIES = 50;

/** Whether `port` on `host` can be listened on right now (it is released again at once). */
function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE' || error.code === 'EACCES') resolve(false);
      else reject(new UserError(`cannot find a free port on ${host}: ${messageOf(error)}`, 'pass --port N'));
    });
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

function localEphemeralRange() {
  try {
    return parseEphemeralRange(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8'));
  } catch {
    return undefined; // not Linux: the default range is assumed
  }
}

/** A port free right now on `host`: in `requested`, else outside the kernel's ephemeral range (see port-range.ts). */
export async function freePort(host: string, requested?: PortRange): Promise<number> {
  const range = serverPortRange(localEphemeralRange(), requested);
  const tried = new Set<number>();
  for (let attempt = 0; attempt < BIND_TRIES; attempt++) {
    const port = pickFreePort(tried, Math.random, range);
    if (await canListen(port, host)) return port;
    tried.add(port);
  }
  throw new UserError(
    `cannot find a free port on ${host}: ${BIND_TRIES} ports of ${range.low}-${range.high} tried, all in use`,
    'give a fixed port (--port N, server.port) or another range (--port-range LO-HI, server.portRange)',
  );
}
