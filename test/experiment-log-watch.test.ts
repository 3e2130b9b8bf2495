/**
 * Broken engines during a trial, end to end through `servelab run` on a launched fault server
 * (support-fault-server.ts): a fatal line in its log while it serves on, and a hung engine whose health answers.
 */

import assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { watchServerLog } from '../src/experiment/run/log-watch.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { FATAL_LINES, faultServerSection } from './support-fault-server.js';

interface InvalidRow {
  reason: string;
  started_at: string;
  finished_at: string;
  completed: number;
  failed: number;
}

describe('the server log during a trial', () => {
  test('only new lines count; a benign NCCL line does not abort; a traceback aborts at once and the exception names it, redacted', async (t) => {
    const log = join(tempDir(t, 'logwatch-unit'), 'server.log');
    writeFileSync(log, 'RuntimeError: CUDA error: an illegal memory access was encountered (before the trial)\n');
    const notes: string[] = [];
    const watch = watchServerLog(log, BUILTIN_PROFILES.vllm!, (line) => notes.push(line));
    // NCCL's IB port events (src/transport/net_ib.cc) are WARNs that mean nothing is wrong.
    appendFileSync(log, 'host:1:2 [0] NCCL INFO Channel 00/02 : 0 1\nhost:1:2 [0] NCCL WARN NET/IB : mlx5_0:1 Got async event : port active\n');
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(watch.signal.aborted, false, String(watch.signal.reason));

    const writtenAt = Date.now();
    appendFileSync(log, `${FATAL_LINES.slice(0, 4).join('\n')}\n`);
    // The watch's timers are unref'd (a trial's load keeps the process alive): this one stands in for it.
    const keepAlive = setInterval(() => {}, 1_000);
    await new Promise((resolve) => watch.signal.addEventListener('abort', resolve));
    clearInterval(keepAlive);
    t.diagnostic(`fatal line written to load aborted: ${Date.now() - writtenAt} ms`);
    assert.match(String(watch.signal.reason), /Traceback \(most recent call last\)/);
    appendFileSync(log, 'RuntimeError: CUDA error: an illegal memory access was encountered; HF_TOKEN=hf_abcdefghijklmnopqrstuv\n');
    const fatal = await watch.stop();
    assert.equal(fatal?.name, 'CUDA error');
    assert.match(fatal!.line, /^RuntimeError: CUDA error: an illegal memory access was encountered; HF_TOKEN=<redacted/);
    assert.deepEqual(notes, []);
  });

  test("vLLM's EngineCore fatal-error line on its own aborts the trial (v1/engine/core.py run_engine_core)", async (t) => {
    const log = join(tempDir(t, 'logwatch-enginecore'), 'server.log');
    writeFileSync(log, '');
    const watch = watchServerLog(log, BUILTIN_PROFILES.vllm!, () => {});
    // As vLLM 0.11 logs it (the line before its Traceback), vllm-project/vllm threads of 2025-11.
    appendFileSync(log, '(EngineCore_DP0 pid=413) ERROR 11-10 12:30:57 [core.py:710] EngineCore encountered a fatal error.\n');
    const keepAlive = setInterval(() => {}, 1_000);
    await new Promise((resolve) => watch.signal.addEventListener('abort', resolve));
    clearInterval(keepAlive);
    const fatal = await watch.stop();
    assert.equal(fatal?.name, 'engine died');
    assert.match(fatal!.line, /EngineCore encountered a fatal error\.$/);
  });

  test('a log that cannot be read is said once, and the trial goes on unwatched', async (t) => {
    const notes: string[] = [];
    const watch = watchServerLog(join(tempDir(t, 'logwatch-none'), 'missing.log'), BUILTIN_PROFILES.vllm!, (line) => notes.push(line));
    assert.equal(await watch.stop(), undefined);
    assert.match(notes.join('\n'), /^cannot follow the server log .*missing\.log \(.*ENOENT.*\): fatal lines during this trial are not watched$/);
  });
});

describe('broken engines during a trial', { timeout: 120_000 }, () => {
  test("SGLang's scheduler dies under a live HTTP server (sglang#6624): /server_info goes unanswered and the trial ends", async (t) => {
    const dir = tempDir(t, 'logwatch-scheduler');
    const store = join(dir, 'servelab.db');
    // Generation requests 1 (the readiness check) and 2 (warm-up) are served, then a few measured ones; the 6th hangs
    // the engine: /v1/models still lists the model, /server_info (the scheduler's round trip) never answers.
    const file = writeExperiment(dir, 'scheduler.yaml', {
      name: 'dead-scheduler',
      profile: 'sglang',
      trials: 1,
      trialRetries: 0,
      server: { command: simCommand({ tpotMs: 5, extra: ['--engine', 'sglang', '--fail', 'hang', '--fail-after-requests', '6'] }) },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 16, seed: 3 }, warmupRequests: 1, requestTimeout: '90s' },
      workloads: [{ kind: 'single-stream', requests: 40 }],
    });
    const result = await cli(['run', file], { store, timeoutMs: 110_000 });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /its scheduler has not answered \/server_info for 15 s/);
    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const row = db.prepare('SELECT reason, started_at, finished_at, completed, failed FROM invalid_trials').get() as InvalidRow;
    const tookMs = Date.parse(row.finished_at) - Date.parse(row.started_at);
    t.diagnostic(`trial ended ${tookMs} ms after it started; ${row.completed} ok; reason: ${row.reason}`);
    assert.match(row.reason, /scheduler has not answered/);
    // Ended by the scheduler probe (15 s), long before the 90 s request timeout.
    assert.ok(tookMs < 60_000, `the trial took ${tookMs} ms`);
  });

  test('a fatal CUDA error in the server log: the trial stops at once, is invalid with that line, is re-run, never counted', async (t) => {
    const dir = tempDir(t, 'logwatch-fatal');
    const store = join(dir, 'servelab.db');
    const requests = 6;
    const file = writeExperiment(dir, 'fatal.yaml', {
      name: 'fatal-log',
      profile: 'openai',
      trials: 1,
      // ~200 ms a request: the line comes at the 2nd measured request of the first trial, long before its end.
      server: faultServerSection(['--fatal-after', '3', '--tpot-ms', '12']),
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 16, seed: 3 }, warmupRequests: 1 },
      workloads: [{ kind: 'single-stream', requests }],
    });
    const result = await cli(['run', file], { store });
    // The rule (stretch.ts): an invalid trial is measured again on the same server while it answers, up to
    // trialRetries (default 2); the fault server logs its error once, so the re-run is valid and the run succeeds.
    assert.equal(result.code, 0, result.stderr);
    const line = 'RuntimeError: CUDA error: an illegal memory access was encountered';
    assert.match(
      result.stderr,
      /INVALID \(\d+ ok, \d+ failed\): the server logged a fatal error during the trial \(CUDA error: .*RuntimeError: CUDA error: an illegal/,
    );
    assert.match(result.stderr, /server is up and answering; measuring the trial again/);

    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const invalid = db.prepare('SELECT reason, started_at, finished_at, completed, failed FROM invalid_trials').all() as InvalidRow[];
    assert.equal(invalid.length, 1);
    assert.ok(invalid[0]!.reason.includes(line), invalid[0]!.reason);
    assert.ok(invalid[0]!.completed + invalid[0]!.failed < requests, `the trial ran to its end: ${JSON.stringify(invalid[0])}`);
    const trials = db.prepare('SELECT metrics_json FROM trials').all() as Array<{ metrics_json: string }>;
    assert.equal(trials.length, 1, 'the planned trial counted once: its re-run');
    assert.equal((JSON.parse(trials[0]!.metrics_json) as { completed: number }).completed, requests);

    const { log_path: logPath } = db.prepare('SELECT log_path FROM servers').get() as { log_path: string };
    const writtenAt = Number(/fatal error written at (\d+)/.exec(readFileSync(logPath, 'utf8'))?.[1]);
    const { completed, failed } = invalid[0]!;
    t.diagnostic(`fatal line written to invalid trial stored: ${Date.parse(invalid[0]!.finished_at) - writtenAt} ms; ${completed} ok, ${failed} failed`);

    const show = await cli(['show', '1'], { store });
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /invalid trials?: 1/i);
    assert.ok(show.stdout.includes(line), show.stdout);
  });

  test('a hung engine (health answers, no first token): the trial stops after one client.requestTimeout, not one per request', async (t) => {
    const dir = tempDir(t, 'logwatch-hang');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'hang.yaml', {
      name: 'hung-engine',
      profile: 'openai',
      trials: 1,
      trialRetries: 0,
      // The warm-up and one measured request are served; every later one hangs.
      server: faultServerSection(['--hang-after', '2']),
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 16, seed: 3 }, warmupRequests: 1, requestTimeout: '2s' },
      workloads: [{ kind: 'single-stream', requests: 20 }],
    });
    const result = await cli(['run', file], { store });
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /was invalid 1 times; last: stopped after 1 of 20 requests failed.*no response data for 2\.0s \(client\.requestTimeout\): raise client\.requestTimeout/,
    );

    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const row = db.prepare('SELECT reason, started_at, finished_at, completed, failed FROM invalid_trials').get() as InvalidRow;
    assert.deepEqual([row.completed, row.failed], [1, 1], 'one request timed out, and nothing was sent after it');
    const tookMs = Date.parse(row.finished_at) - Date.parse(row.started_at);
    t.diagnostic(`hung trial stopped after ${tookMs} ms (client.requestTimeout 2 s)`);
    // One timeout plus slack for a loaded machine; the 19 other requests timing out one by one would take 38 s.
    assert.ok(tookMs < 2_000 + 5_000, `the hung trial took ${tookMs} ms`);
  });
});
