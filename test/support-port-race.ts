/**
 * A server command whose first start loses its port: a holder process listens on the picked port, then runs the
 * real server on it (which fails its bind for real). With `thief: 'server'` the port is taken instead by the same
 * server command in its own session, which answers on it, as another user's server started between the pick and the bind
 * would: readiness meets a foreign listener before ours fails its bind. Later starts run the server alone. Every
 * start appends its port to the mark file.
 */

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processAlive } from '../src/util/proc-identity.js';

const HOLDER = `import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
const [mark, thief, port, ...command] = process.argv.slice(2);
const first = !existsSync(mark);
appendFileSync(mark, port + '\\n');
const run = () => process.exit(spawnSync(command[0], command.slice(1), { stdio: 'inherit' }).status ?? 1);
if (!first) run();
else if (thief === 'holder') createServer().listen(Number(port), '127.0.0.1', run);
else {
  // detached: its own session and process group, so it is nobody's child in the launched group.
  const other = spawn(command[0], command.slice(1), { detached: true, stdio: 'ignore' });
  other.unref();
  writeFileSync(mark + '.thief', String(other.pid));
  let tries = 0;
  const probe = () => {
    const socket = connect(Number(port), '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), run()));
    socket.once('error', () => (++tries < 200 ? setTimeout(probe, 50) : run()));
  };
  probe();
}
`;

/** What a launch says when a port it picked was lost before its server could bind it (launch/chosen-port.ts). */
export const lostPortNote = (port: number): string => `port ${port} was taken before the server could bind it; starting again on another port`;

/**
 * The argv prefix to put before the server's command (its executable first); `ports()` reads the ports of every
 * start so far; `thiefPid()` the other server's pid (thief 'server'), which `stopThief()` kills if it still runs.
 */
export function firstStartLosesPort(
  dir: string,
  thief: 'holder' | 'server' = 'holder',
): { prefix: string[]; ports: () => number[]; thiefPid: () => number | undefined; stopThief: () => void } {
  const script = join(dir, 'first-start-loses-port.mjs');
  const mark = join(dir, 'port-starts');
  writeFileSync(script, HOLDER);
  const thiefPid = (): number | undefined => (existsSync(`${mark}.thief`) ? Number(readFileSync(`${mark}.thief`, 'utf8')) : undefined);
  return {
    prefix: [process.execPath, script, mark, thief, '{port}'],
    ports: () => readFileSync(mark, 'utf8').trim().split('\n').map(Number),
    thiefPid,
    stopThief: () => {
      const pid = thiefPid();
      if (pid !== undefined && processAlive(pid)) process.kill(pid, 'SIGKILL');
    },
  };
}
