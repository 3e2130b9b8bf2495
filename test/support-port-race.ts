/**
 * A server command whose first start loses its port: a holder process listens on the picked port, then runs the
 * real simulator on it (which fails with a real EADDRINUSE). Later starts run the simulator alone. Every start
 * appends its port to the mark file.
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const HOLDER = `import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
const [mark, port, ...simulator] = process.argv.slice(2);
const first = !existsSync(mark);
appendFileSync(mark, port + '\\n');
const run = () => process.exit(spawnSync(process.execPath, simulator, { stdio: 'inherit' }).status ?? 1);
if (first) createServer().listen(Number(port), '127.0.0.1', run);
else run();
`;

/** The argv prefix to put before the simulator's arguments; `ports()` reads the ports of every start so far. */
export function firstStartLosesPort(dir: string): { prefix: string[]; ports: () => number[] } {
  const script = join(dir, 'first-start-loses-port.mjs');
  const mark = join(dir, 'port-starts');
  writeFileSync(script, HOLDER);
  return {
    prefix: [process.execPath, script, mark, '{port}'],
    ports: () => readFileSync(mark, 'utf8').trim().split('\n').map(Number),
  };
}
