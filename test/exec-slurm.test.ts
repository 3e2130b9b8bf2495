/**
 * runOnSlurm against a real single-node Slurm cluster (ci/start-slurm.sh), each job one lane running `servelab run
 * --lane K` with the simulator as server. Skipped, saying why, where that cluster is not running.
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
import { lanesOfBlocks, trialsOf } from './support-lanes.js';
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

/** An experiment with two server configs (two variants that differ in server args), on `lanes` (no lanes: one job). */
function writeSweep(dir: string, options: { slowArgs?: string[]; retries?: number; loadMs?: number; lanes?: number; trials?: number } = {}): string {
  return writeExperiment(dir, 'exp.yaml', {
    name: 'slurm-ci-sweep',
    server: {
      command: [process.execPath, BIN, 'simulate', '--port', '{port}', '--load-ms', String(options.loadMs ?? 300), '--ttft-ms', '2', '--jitter', '0'],
      readyTimeout: '120s',
    },
    executor: { kind: 'slurm', retries: options.retries ?? 0, timeLimit: '10' },
    ...(options.lanes !== undefined && { lanes: [{ name: 'job', count: options.lanes }] }),
    client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 8, seed: 1 }, warmupRequests: 1 },
    trials: options.trials ?? 2,
    variants: { fast: { args: ['--tpot-ms', '1'] }, slow: { args: options.slowArgs ?? ['--tpot-ms', '3'] } },
  });
}

/** Every planned slot measured exactly once, each block within one lane unless a lane died inside it. */
function slotsOf(storePath: string, runId: number): string[] {
  const db = openStore(storePath, { readonly: true });
  try {
    return listTrials(db, runId).map((trial) => `${trial.variant} ${trial.block} ${trial.repetition}`);
  } finally {
    db.close();
  }
}

describe('Slurm lanes against a real cluster', { timeout: 600_000 }, () => {
  test('two lanes are two concurrent jobs, each running both server configs on its node; the run is finalized', needs(NO_SLURM), async (t) => {
    const dir = tempDir(t, 'slurm-test');
    const lines: string[] = [];
    const storePath = join(dir, 'store', 'servelab.db');
    const result = await runOnSlurm({
      experimentPath: writeSweep(dir, { lanes: 2, trials: 4 }),
      storePath,
      config: { kind: 'slurm', retries: 0, timeLimit: '10' },
      pollIntervalMs: 500,
      log: (line) => lines.push(line),
    });
    assert.equal(result.outcome.status, 'done', `${result.outcome.message}\n${lines.join('\n')}`);
    assert.deepEqual(
      result.jobs.map((job) => [job.lane, job.state, job.jobIds.length]),
      [
        ['job-1', 'COMPLETED', 1],
        ['job-2', 'COMPLETED', 1],
      ],
    );
    assert.match(lines[0]!, /on Slurm, 2 jobs at once, each a lane running every server config in turn on its node \(configs compared within a node\)/);

    const trials = trialsOf(storePath, result.runId);
    assert.equal(trials.length, 8);
    assert.equal(new Set(slotsOf(storePath, result.runId)).size, 8, 'no slot twice');
    assert.deepEqual(new Set(trials.map((trial) => trial.lane)), new Set([0, 1]), 'both jobs measured');
    for (const [block, lanes] of lanesOfBlocks(trials)) assert.equal(lanes.size, 1, `block ${block} within one job`);
    // Both configs ran inside each job: its comparisons are within its node.
    for (const lane of [0, 1]) assert.equal(new Set(trials.filter((trial) => trial.lane === lane).map((trial) => trial.variant)).size, 2);
    // The two jobs ran at the same time.
    const span = (lane: number) => {
      const times = trials.filter((trial) => trial.lane === lane).flatMap((trial) => [Date.parse(trial.started_at), Date.parse(trial.finished_at)]);
      return [Math.min(...times), Math.max(...times)] as const;
    };
    assert.ok(span(0)[0] < span(1)[1] && span(1)[0] < span(0)[1], 'the lanes overlap in time');
    const db = openStore(storePath, { readonly: true });
    t.after(() => db.close());
    assert.equal(getRun(db, result.runId)?.status, 'done');
  });

  test('a job cancelled mid-run (scancel): its unmeasured trials run on the other lane, nothing lost or measured twice', needs(NO_SLURM), async (t) => {
    const dir = tempDir(t, 'slurm-test');
    const lines: string[] = [];
    const storePath = join(dir, 'servelab.db');
    let cancelled: string | undefined;
    const watch = async () => {
      // Cancel lane 2's job once it has stored a trial and still has blocks to run.
      for (let polls = 0; polls < 600 && cancelled === undefined; polls++) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const jobId = lines.map((line) => /^slurm job (\d+): lane job-2 submitted/.exec(line)?.[1]).find(Boolean);
        if (jobId === undefined || !existsSync(storePath)) continue;
        if (trialsOf(storePath, 1).some((trial) => trial.lane === 1)) {
          cancelled = jobId;
          spawnSync('scancel', [jobId]);
        }
      }
    };
    const [result] = await Promise.all([
      runOnSlurm({
        experimentPath: writeSweep(dir, { lanes: 2, trials: 6 }),
        storePath,
        config: { kind: 'slurm', retries: 0, timeLimit: '10' },
        pollIntervalMs: 500,
        log: (line) => lines.push(line),
      }),
      watch(),
    ]);
    assert.ok(cancelled, lines.join('\n'));
    assert.equal(result.outcome.status, 'done', `${result.outcome.message}\n${lines.join('\n')}`);
    assert.equal(result.jobs.find((job) => job.lane === 'job-2')?.state, 'CANCELLED');
    assert.equal(result.jobs.find((job) => job.lane === 'job-1')?.state, 'COMPLETED');
    assert.ok(
      lines.some((line) => new RegExp(`slurm job ${cancelled} \\(lane job-2\\) ended CANCELLED; its unmeasured trials go to the 1 other lanes`).test(line)),
      lines.join('\n'),
    );
    const trials = trialsOf(storePath, result.runId);
    assert.equal(trials.length, 12, 'every planned trial measured');
    assert.equal(new Set(slotsOf(storePath, result.runId)).size, 12, 'none twice');
    assert.ok(
      trials.some((trial) => trial.lane === 1),
      'the cancelled lane kept what it measured',
    );
    assert.ok(trials.filter((trial) => trial.lane === 0).length > 6, 'the other lane ran more than its half');
  });

  test('a failing lane is reported with its log tail and resubmitted as asked; a resume submits it again', needs(NO_SLURM), async (t) => {
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
    assert.equal(result.jobs.length, 1, 'one job without lanes:');
    const [job] = result.jobs;
    assert.equal(job!.state, 'FAILED');
    assert.equal(job!.jobIds.length, 2, 'resubmitted once (retries: 1)');
    assert.ok(
      job!.logTail?.some((line) => /exited|crash|error/i.test(line)),
      job!.logTail?.join('\n'),
    );
    assert.ok(lines.some((line) => /ended FAILED/.test(line)) && lines.some((line) => /resubmitting lane lane1/.test(line)), lines.join('\n'));
    assert.match(result.outcome.message ?? '', /FAILED/);
    const db = openStore(storePath, { readonly: true });
    t.after(() => db.close());
    assert.equal(getRun(db, result.runId)?.status, 'failed');

    // `servelab run --resume` dispatches to Slurm again: the stored config is replayed (it still crashes; its
    // retries: 1 resubmits it once).
    const resumed = await cli(['run', '--resume', String(result.runId), '--json'], { store: storePath, timeoutMs: 300_000 });
    assert.equal(JSON.parse(resumed.stdout).runId, result.runId, resumed.stderr);
    assert.equal(JSON.parse(resumed.stdout).status, 'failed', resumed.stderr);
    assert.equal(resumed.code, 1, 'a failed run exits non-zero');
    assert.match(resumed.stderr, /next: the measured trials are kept/);
    assert.match(resumed.stderr, /on Slurm, 1 job, each a lane running every server config in turn/);
    assert.match(resumed.stderr, /lane lane1 submitted/);
  });

  test('an abort (Ctrl-C) cancels the jobs and marks the run interrupted', needs(NO_SLURM), async (t) => {
    const dir = tempDir(t, 'slurm-test');
    const controller = new AbortController();
    const result = await runOnSlurm({
      experimentPath: writeSweep(dir, { loadMs: 120_000, lanes: 2 }),
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
