import { createServer } from 'node:net';
import { messageOf, UserError } from '../util/errors.js';

/** A port free right now on `host`, found by letting the kernel pick one (bind to port 0). */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', (error) => reject(new UserError(`cannot find a free port on ${host}: ${messageOf(error)}`, 'pass --port N')));
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
