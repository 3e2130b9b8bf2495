/**
 * Opt-in, against a real llama.cpp llama-server (see ../shared/real-engine/README.md to build one and make a model):
 *   SERVELAB_LLAMA_SERVER=/path/to/llama-server SERVELAB_LLAMA_MODEL=/path/to/target.gguf npm run test:real
 * An experiment whose llama-server is killed with SIGKILL in the middle of a trial: the trial is stored as invalid
 * with its cause, the server restarted, the trial measured again, and no failed request reaches a counted trial.
 */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { type CliResult, SERVELAB, tempDir, writeExperiment } from '../support-experiment.js';
import { pollFor, unlessNoSchema } from '../support-wait.js';
import { LLAMA_MODEL, LLAMA_SERVER, llamaSkip } from './support-llama.js';

const skip = llamaSkip();

describe('real llama-server: trial validity', { timeout: 300_000 }, () => {
  test('a llama-server killed mid-trial: the trial is invalid with its cause, re-run on a restarted server', { skip }, async (t) => {
    const dir = tempDir(t, 'llama-kill');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'kill.yaml', {
      name: 'llama-kill9',
      profile: 'llamacpp',
      server: { command: [LLAMA_SERVER!, '-m', LLAMA_MODEL!, '--host', '127.0.0.1', '--port', '{port}', '-ngl', '99'], readyTimeout: '5m' },
      client: { prompts: { kind: 'synthetic', inputTokens: 32, outputTokens: 200, seed: 3 }, warmupRequests: 1 },
      workloads: [{ kind: 'single-stream', requests: 6 }],
      trials: 2,
    });
    const child = spawn(process.execPath, [SERVELAB, 'run', file], { env: { ...process.env, SERVELAB_STORE: store }, stdio: ['ignore', 'pipe', 'pipe'] });
    t.after(() => child.kill('SIGKILL'));
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const done = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, stdout: '', stderr })));
    await pollFor('the store', () => (existsSync(store) ? true : undefined), 60_000);
    const db = new Database(store, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    t.after(() => db.close());
    // undefined until the runner has created the schema.
    const row = (sql: string) => unlessNoSchema(() => db.prepare(sql).get() as { pid: number } | undefined, undefined);
    const pid = await pollFor(
      'a trial in flight',
      () => row("SELECT s.pid FROM servers s JOIN progress p ON p.run_id = s.run_id WHERE s.status = 'ready' AND p.completed >= 1 ORDER BY s.id LIMIT 1")?.pid,
      240_000,
    );
    process.kill(pid, 'SIGKILL');
    const result = await done;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /INVALID .*server was killed by SIGKILL during the trial/);
    const invalid = db.prepare('SELECT reason FROM invalid_trials').all() as Array<{ reason: string }>;
    assert.deepEqual(
      invalid.map((r) => r.reason),
      ['server was killed by SIGKILL during the trial'],
    );
    const trials = db.prepare('SELECT metrics_json FROM trials').all() as Array<{ metrics_json: string }>;
    assert.equal(trials.length, 2);
    assert.ok(
      trials.every((r) => (JSON.parse(r.metrics_json) as { failed: number }).failed === 0),
      'no failed request in a counted trial',
    );
  });
});
