/**
 * A server command whose first start loses its port: a holder process listens on the picked port, then runs the
 * real simulator on it (which fails with a real EADDRINUSE). With `thief: 'server'` the port is taken instead by a
 * simulator in its own session that answers on it, as another user's server started between the pick and the bind
 * would: readiness meets a foreign listener before ours fails its bind. Later starts run the simulator alone. Every
 * start appends its port to the mark file.
 */

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const HOLDER = `import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
const [mark, thief, port, ...simulator] = process.argv.slice(2);
const first = !existsSync(mark);
appendFileSync(mark, port + '\\n');
const run = () => process.exit(spawnSync(process.execPath, simulator, { stdio: 'inherit' }).status ?? 1);
if (!first) run();
else if (thief === 'holder') createServer().listen(Number(port), '127.0.0.1', run);
else {
  // detached: its own session and process group, so it is nobody's child in the launched group.
  const other = spawn(process.execPath, simulator, { detached: true, stdio: 'ignore' });
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

/** The argv prefix to put before the simulator's arguments; `ports()` reads the ports of every start so far. */
export function firstStartLosesPort(
  dir: string,
  thief: 'holder' | 'server' = 'holder',
): { prefix: string[]; ports: () => number[]; thiefPid: () => number | undefined } {
  const script = join(dir, 'first-start-loses-port.mjs');
  const mark = join(dir, 'port-starts');
  writeFileSync(script, HOLDER);
  return {
    prefix: [process.execPath, script, mark, thief, '{port}'],
    ports: () => readFileSync(mark, 'utf8').trim().split('\n').map(Number),
    thiefPid: () => (existsSync(`${mark}.thief`) ? Number(readFileSync(`${mark}.thief`, 'utf8')) : undefined),
  };
}
