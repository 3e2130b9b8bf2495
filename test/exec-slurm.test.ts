/**
 * runOnSlurm against a real single-node Slurm cluster (ci/start-slurm.sh), each job running `servelab run` with the
 * simulator as server. Skipped, saying why, where that cluster is not running.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseSqueue, SQUEUE_FORMAT } from '../src/exec/slurm-text.js';
import { runOnSlurm } from '../src/experiment/run/slurm.js';
import { openStore } from '../src/store/db.js';
import { getRun, listTrials } from '../src/store/queries.js';
import { cli, tempDir, writeExperiment } from './support-experiment.js';
import { needs } from './support-services.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const CI_DIR = process.env.SERVELAB_CI_DIR ?? '/tmp/servelab-ci';

function ciSlurm(): string | undefined {
  const howTo = 'run `sudo bash ci/start-slurm.sh` to enable these tests (CI does)';
  if (!existsSync(join(CI_DIR, 'slurm', 'ready'))) return `test Slurm cluster not running (${join(CI_DIR, 'slurm', 'ready')} missing): ${howTo}`;
  const sinfo = spawnSync('sinfo', ['-h', '-o', '%T'], { encoding: 'utf8', timeout: 15_000 });
  if (sinfo.status !== 0 || !/idle|mixed|allocated|completing/.test(sinfo.stdout)) {
    return `test Slurm cluster not usable (sinfo: ${(sinfo.stdout || sinfo.stderr || '').trim()}): ${howTo}`;
  }
  return undefined;
}

const NO_SLURM = ciSlurm();

/** An experiment with two server configs (two variants that differ in server args): two Slurm jobs. */
function writeSweep(dir: string, options: { slowArgs?: string[]; retries?: number; loadMs?: number } = {}): string {
  return writeExperiment(dir, 'exp.yaml', {
    name: 'slurm-ci-sweep',
    server: {
      command: [process.execPath, BIN, 'simulate', '--port', '{port}', '--load-ms', String(options.loadMs ?? 300), '--ttft-ms', '2', '--jitter', '0'],
      readyTimeout: '120s',
    },
    executor: { kind: 'slurm', retries: options.retries ?? 0, timeLimit: '10' },
    client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 8, seed: 1 }, warmupRequests: 1 },
    trials: 2,
    variants: { fast: { args: ['--tpot-ms', '1'] }, slow: { args: options.slowArgs ?? ['--tpot-ms', '3'] } },
  });
}

describe('Slurm dispatch against a real cluster', { timeout: 600_000 }, () => {
  test('a two-config sweep becomes two jobs whose trials land in one store, then the run is finalized', needs(NO_SLURM), async (t) => {
    const dir = tempDir(t, 'slurm-test');
    const lines: string[] = [];
    const storePath = join(dir, 'store', 'servelab.db');
    const result = await runOnSlurm({
      experimentPath: writeSweep(dir),
      storePath,
      config: { kind: 'slurm', retries: 0, timeLimit: '10' },
      pollIntervalMs: 500,
      log: (line) => lines.push(line),
    });
    assert.equal(result.outcome.status, 'done', `${result.outcome.message}\n${lines.join('\n')}`);
    assert.equal(result.jobs.length, 2);
    assert.ok(
      result.jobs.every((job) => job.state === 'COMPLETED' && job.jobIds.length === 1),
      JSON.stringify(result.jobs),
    );
    assert.notEqual(result.jobs[0]!.jobIds[0], result.jobs[1]!.jobIds[0]);

    const db = openStore(storePath, { readonly: true });
    t.after(() => db.close());
    const trials = listTrials(db, result.runId);
    assert.equal(trials.filter((trial) => trial.variant === 'fast').length, 2);
    assert.equal(trials.filter((trial) => trial.variant === 'slow').length, 2);
    assert.equal(getRun(db, result.runId)?.status, 'done');
    assert.ok(
      lines.some((line) => /RUNNING on localhost/.test(line)),
      lines.join('\n'),
    );
  });

  test('a failing config is reported with its log tail and resubmitted as asked; the other config still completes', needs(NO_SLURM), async (t) => {
    const dir = tempDir(t, 'slurm-test');
    const lines: string[] = [];
    const storePath = join(dir, 'servelab.db');
    const result = await runOnSlurm({
      experimentPath: writeSweep(dir, { slowArgs: ['--fail', 'crash'], retries: 1 }),
      storePath,
      config: { kind: 'slurm', retries: 1, timeLimit: '10' },
      pollIntervalMs: 500,
      log: (line) => lines.push(line),
    });
    assert.equal(result.outcome.status, 'failed');
    const failed = result.jobs.find((job) => job.state !== 'COMPLETED');
    const completed = result.jobs.find((job) => job.state === 'COMPLETED');
    assert.ok(failed && completed, JSON.stringify(result.jobs));
    assert.equal(failed.state, 'FAILED');
    assert.equal(failed.jobIds.length, 2, 'resubmitted once (retries: 1)');
    assert.ok(
      failed.logTail?.some((line) => /exited|crash|error/i.test(line)),
      failed.logTail?.join('\n'),
    );
    assert.ok(lines.some((line) => /ended FAILED/.test(line)) && lines.some((line) => /resubmitting/.test(line)), lines.join('\n'));
    assert.match(result.outcome.message ?? '', /FAILED/);

    const db = openStore(storePath, { readonly: true });
    t.after(() => db.close());
    assert.equal(listTrials(db, result.runId).filter((trial) => trial.variant === 'fast').length, 2, 'the good config kept its trials');
    assert.equal(getRun(db, result.runId)?.status, 'failed');

    // `servelab run --resume` dispatches to Slurm again, submitting only the config with missing trials (it still
    // crashes: the stored config is replayed; its retries: 1 resubmits it once).
    const resumed = await cli(['run', '--resume', String(result.runId), '--json'], { store: storePath, timeoutMs: 300_000 });
    assert.equal(JSON.parse(resumed.stdout).runId, result.runId, resumed.stderr);
    assert.equal(JSON.parse(resumed.stdout).status, 'failed', resumed.stderr);
    assert.equal(resumed.code, 1, 'a failed run exits non-zero');
    assert.match(resumed.stderr, /next: the measured trials are kept/);
    assert.match(resumed.stderr, /on Slurm, 1 server configs to run, 2 of 4 trials to measure/);
    assert.match(resumed.stderr, new RegExp(`server config ${failed.serverKey} submitted`));
    assert.doesNotMatch(resumed.stderr, new RegExp(`server config ${completed.serverKey} submitted`));
  });

  test('an abort (Ctrl-C) cancels the jobs and marks the run interrupted', needs(NO_SLURM), async (t) => {
    const dir = tempDir(t, 'slurm-test');
    const controller = new AbortController();
    const result = await runOnSlurm({
      experimentPath: writeSweep(dir, { loadMs: 120_000 }),
      storePath: join(dir, 'servelab.db'),
      config: { kind: 'slurm', retries: 3 },
      pollIntervalMs: 500,
      signal: controller.signal,
      log: (line) => /RUNNING/.test(line) && controller.abort(),
    });
    assert.equal(result.outcome.status, 'interrupted');
    const ids = result.jobs.flatMap((job) => job.jobIds);
    assert.equal(ids.length, 2, 'no resubmission after the abort');
    const deadline = Date.now() + 60_000;
    let states: string[] = [];
    while (Date.now() < deadline) {
      const squeue = spawnSync('squeue', ['-h', '--states=all', '-j', ids.join(','), '-o', SQUEUE_FORMAT], { encoding: 'utf8' });
      states = [...parseSqueue(squeue.stdout).values()].map((status) => status.state);
      if (states.length === 2 && states.every((state) => state === 'CANCELLED')) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    assert.deepEqual(states, ['CANCELLED', 'CANCELLED']);
  });
});
