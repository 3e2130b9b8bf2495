import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { configurationChanges, guardReference, sameConfiguration } from '../src/experiment/run/reference-guard.js';
import { createRun } from '../src/experiment/run/run-store.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import type { Fingerprint } from '../src/fingerprint/types.js';
import { openStore } from '../src/store/db.js';
import { listTrials } from '../src/store/queries.js';
import { insertTrial, type NewTrial, setRunStatus } from '../src/store/runs.js';
import { UserError } from '../src/util/errors.js';
import { tempDir } from './support-experiment.js';

function fingerprint(env: Record<string, string>, readings: { load?: string; smClockMHz?: number } = {}): Fingerprint {
  return {
    servelabVersion: '0.1.0',
    servelabGitSha: 'abc',
    executor: 'local',
    host: { hostname: 'box', os: 'Linux', kernel: '6.8.0', cpuModel: 'EPYC', cpus: 16, memoryGiB: 251.5 },
    gpus: [
      { index: 0, name: 'NVIDIA H200', driver: '570.86', memoryMiB: 143771, smClockMHz: readings.smClockMHz ?? 1980, maxSmClockMHz: 1980, powerLimitW: 700 },
    ],
    command: ['llama-server', '-m', 'model.gguf', '--port', '{port}'],
    env: { ...env },
    packages: { 'llama.cpp': 'b4500' },
    ...(readings.load !== undefined && { preflight: { 'host.load': readings.load } }),
  };
}

const TUNED = { NCCL_PROTO: 'LL', NCCL_ALGO: 'Ring' };

function setup(t: Parameters<typeof tempDir>[0]) {
  const dir = tempDir(t, 'guard');
  const file = join(dir, 'exp.yaml');
  writeFileSync(
    file,
    `name: guard-test
profile: llamacpp
server: { command: [llama-server, -m, model.gguf, --port, "{port}"] }
workloads: [{ kind: single-stream, requests: 2 }]
trials: 2
variants: { baseline: {} }
`,
  );
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  return { db, experiment: loadExperiment(file) };
}

function trialOf(runId: number, block: number): NewTrial {
  return {
    runId,
    variant: 'baseline',
    serverKey: 'k',
    workload: 'single-stream',
    params: {},
    block,
    repetition: block,
    startedAt: '2026-12-04T00:00:00.000Z',
    finishedAt: '2026-12-04T00:00:01.000Z',
    metrics: {
      outputTokensPerSecond: 88.8,
      requestsPerSecond: 1,
      perStreamTokensPerSecond: 88.8,
      ttftMedianMs: 20,
      ttftP90Ms: 26,
      ttftP99Ms: 30,
      tpotMedianMs: 10,
      itlP99Ms: 12,
      e2eMedianMs: 700,
      completed: 2,
      failed: 0,
    },
  };
}

describe('configurationChanges: configuration vs volatile readings', () => {
  test('a lost tuning variable is a configuration change; load, current clock, servelab version, hostname and a rotated secret are not', () => {
    const before = fingerprint(TUNED, { load: 'host busy: load average 5.30 on 16 CPUs', smClockMHz: 1980 });
    before.env.HF_TOKEN = '<redacted:0123456789ab>';
    const after = { ...fingerprint({ NCCL_ALGO: 'Ring' }, { load: 'host busy: load average 3.40 on 16 CPUs', smClockMHz: 345 }), servelabGitSha: 'def' };
    // A rotated token: another marker, the same configuration.
    after.env.HF_TOKEN = '<redacted:ba9876543210>';
    // Another node of the same kind: which machine, not how it is set up.
    after.host.hostname = 'h200-7';
    after.gpus[0]!.busId = '00000000:19:00.0';
    assert.deepEqual(configurationChanges(before, after), [{ key: 'env.NCCL_PROTO', before: 'LL' }]);
  });

  test('driver, GPU count, power limit, application clocks and build ids are configuration', () => {
    const before = fingerprint(TUNED);
    const after = fingerprint(TUNED);
    after.gpus[0]!.driver = '575.51';
    after.gpus[0]!.powerLimitW = 500;
    after.gpus.push({ ...after.gpus[0]!, index: 1 });
    after.packages['llama.cpp'] = 'b4600';
    after.preflight = { 'gpu0.applicationClocks': 'GPU 0: application clocks 1410 MHz below max 1980 MHz' };
    const keys = configurationChanges(before, after).map((change) => change.key);
    for (const key of ['gpus.0.driver', 'gpus.0.powerLimitW', 'gpus.1.name', 'packages.llama.cpp', 'preflight.gpu0.applicationClocks'])
      assert.ok(keys.includes(key), `${key} in ${keys}`);
  });
});

describe('guardReference', () => {
  test('a first run proceeds; a lost variable stops the next one before any trial, unless accepted', (t) => {
    const { db, experiment } = setup(t);
    const target = (runId: number) => ({ runId, experimentName: experiment.name, filePath: experiment.filePath, serverKey: 'k', variants: ['baseline'] });
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);

    const first = createRun(db, experiment);
    guardReference(db, target(first), fingerprint(TUNED), { accept: false, log });
    assert.deepEqual(lines, []);
    insertTrial(db, trialOf(first, 0), fingerprint(TUNED, { load: 'host busy: load average 5.30 on 16 CPUs' }), []);
    setRunStatus(db, first, 'done');

    // Only the readings differ (load, current clock): the same configuration, silence.
    const second = createRun(db, experiment);
    guardReference(db, target(second), fingerprint(TUNED, { smClockMHz: 210 }), { accept: false, log });
    assert.deepEqual(lines, []);

    assert.throws(
      () => guardReference(db, target(second), fingerprint({ NCCL_ALGO: 'Ring' }), { accept: false, log }),
      (error: unknown) =>
        error instanceof UserError &&
        error.message ===
          `environment of baseline differs from run ${first} (the last finished run of "guard-test"): NCCL_PROTO LL → (unset); nothing was measured` &&
        /--accept-env-change/.test(error.hint),
    );
    assert.deepEqual(lines, [
      `configuration of baseline differs from run ${first} (the last finished run of "guard-test"), before any trial:`,
      '  NCCL_PROTO LL → (unset)',
    ]);

    lines.length = 0;
    guardReference(db, target(second), fingerprint({ NCCL_ALGO: 'Ring' }), { accept: true, log });
    assert.equal(lines.at(-1), 'measuring anyway (--accept-env-change): this configuration starts its own drift history');
  });

  test('a resumed run is compared with its own earlier trials: an accepted change is not asked again, a lost variable is', (t) => {
    const { db, experiment } = setup(t);
    const target = (runId: number) => ({ runId, experimentName: experiment.name, filePath: experiment.filePath, serverKey: 'k', variants: ['baseline'] });
    const done = createRun(db, experiment);
    insertTrial(db, trialOf(done, 0), fingerprint(TUNED), []);
    setRunStatus(db, done, 'done');
    const resumed = createRun(db, experiment);
    insertTrial(db, trialOf(resumed, 0), fingerprint({ NCCL_PROTO: 'Simple' }), []);
    guardReference(db, target(resumed), fingerprint({ NCCL_PROTO: 'Simple' }), { accept: false, log: () => {} });
    assert.throws(
      () => guardReference(db, target(resumed), fingerprint({}), { accept: false, log: () => {} }),
      /differs from this run's earlier trials: NCCL_PROTO Simple → \(unset\)/,
    );
  });
});

describe('sameConfiguration', () => {
  test('the drift history keeps trials of the same configuration only, whatever their readings', (t) => {
    const { db, experiment } = setup(t);
    const runId = createRun(db, experiment);
    insertTrial(db, trialOf(runId, 0), fingerprint(TUNED, { load: 'host busy: load average 9.21 on 16 CPUs' }), []);
    insertTrial(db, trialOf(runId, 1), fingerprint({}), []);
    const history = listTrials(db, runId);
    assert.deepEqual(
      sameConfiguration(db, history, fingerprint(TUNED, { smClockMHz: 1410 })).map((trial) => trial.block),
      [0],
    );
  });
});
