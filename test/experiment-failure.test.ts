import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cli, tempDir, writeExperiment } from './support-experiment.js';

describe('a server that cannot start', () => {
  test('a fixed port already in use fails the run at once, naming who holds it, before any server starts', async (t) => {
    const dir = tempDir(t, 'failure');
    const store = join(dir, 'servelab.db');
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    t.after(() => blocker.close());
    const port = (blocker.address() as { port: number }).port;
    const file = writeExperiment(dir, 'taken.yaml', {
      name: 'port-taken',
      // A fixed port that this test process holds: the server would die at bind, and readiness could reach the holder.
      server: { command: ['node', '{servelab}', 'simulate', '--port', '{port}', '--load-ms', '100'], port, readyTimeout: '5m' },
    });
    const result = await cli(['run', file], { store, timeoutMs: 60_000 });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, new RegExp(`servelab: port ${port} is already in use by pid ${process.pid} \\(`));
    assert.match(result.stderr, /next: stop that server, or choose another port/);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
    const listed = await cli(['ls', '--json'], { store });
    const [run] = JSON.parse(listed.stdout) as Array<{ status: string; message: string }>;
    assert.equal(run!.status, 'failed');
    assert.match(run!.message, /already in use/);
  });
});
