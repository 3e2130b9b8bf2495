/**
 * NCCL failures as a real tensor-parallel server prints them (captured on an H200: test/fixtures/nccl/): readiness
 * fails at once with the NCCL line, for a local launch of a process that writes the captured log and hangs on.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { launchServer } from '../src/launch/launch.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { NotReadyError } from '../src/ready/errors.js';

const FIXTURES = fileURLToPath(new URL('../../test/fixtures/nccl/', import.meta.url));

describe('NCCL failures in a server log', () => {
  for (const [fixture, line] of [
    ['duplicate-gpu-rank0.log', /NCCL WARN Duplicate GPU detected/],
    ['no-socket-interface-rank0.log', /NCCL WARN Bootstrap : no socket interface found/],
  ] as const) {
    test(`${fixture}: readiness fails at once with the NCCL line`, async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'servelab-nccl-'));
      t.after(() => rmSync(dir, { recursive: true, force: true }));
      const started = Date.now();
      // The server prints its failure and hangs instead of exiting, as a rank waiting on a dead peer does.
      const launch = launchServer({
        command: ['sh', '-c', 'cat "$1"; exec sleep 60', 'sh', join(FIXTURES, fixture)],
        env: {},
        profile: BUILTIN_PROFILES.vllm!,
        logPath: join(dir, 'server.log'),
        readyTimeoutMs: 60_000,
      });
      await assert.rejects(launch, (error: unknown) => {
        assert.ok(error instanceof NotReadyError, String(error));
        assert.equal(error.kind, 'fatal-log');
        assert.match(error.message, /NCCL/);
        assert.ok(
          error.logTail?.some((tail) => line.test(tail)),
          error.logTail?.join('\n'),
        );
        return true;
      });
      assert.ok(Date.now() - started < 10_000, `failed after ${Date.now() - started} ms`);
    });
  }
});
