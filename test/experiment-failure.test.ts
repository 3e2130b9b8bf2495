import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { cli, tempDir, writeExperiment } from './support-experiment.js';

describe('a server that cannot start', () => {
  test('fails the run with the server log tail; a taken port is retried once', async (t) => {
    const dir = tempDir(t, 'failure');
    const store = join(dir, 'servelab.db');
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    t.after(() => blocker.close());
    const port = (blocker.address() as { port: number }).port;
    const file = writeExperiment(dir, 'taken.yaml', {
      name: 'port-taken',
      // A fixed port that is already in use: the server dies at bind, every time.
      server: { command: ['node', '{servelab}', 'simulate', '--port', '{port}', '--load-ms', '100'], port, readyTimeout: '5m' },
    });
    const result = await cli(['run', file], { store, timeoutMs: 60_000 });
    assert.equal(result.code, 4, result.stderr);
    assert.match(result.stderr, /its port was taken before the server could bind it; starting again on another port/);
    assert.match(result.stderr, /failed to start: .*\n.*last lines of .*\n(.*\n)*.*EADDRINUSE/);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
    const listed = await cli(['ls', '--json'], { store });
    const [run] = JSON.parse(listed.stdout) as Array<{ status: string; message: string }>;
    assert.equal(run!.status, 'failed');
    assert.match(run!.message, /exited/);
  });
});
