import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { NVIDIA_SMI_FIELDS } from '../src/fingerprint/parse.js';
import { PREFLIGHT_FIELDS, parseQueryCsv, SAMPLE_FIELDS } from '../src/telemetry/nvidia-smi.js';
import { STREAM_FIELDS } from '../src/telemetry/stream.js';
import { cli, tempDir, writeExperiment } from './support-experiment.js';

const fixture = (name: string): string => readFileSync(new URL(`../../test/fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');
const CAPTURE_FIELDS = (
  'timestamp,index,uuid,name,pci.bus_id,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.memory,power.draw,power.limit,enforced.power.limit,' +
  'temperature.gpu,utilization.gpu,utilization.memory,memory.used,memory.total,clocks_event_reasons.active,a,b,c,d,e,f,g,persistence_mode,pstate,driver_version'
).split(',');

/**
 * A directory with an nvidia-smi that replays the last row of the busy H200 capture (foreign 31 GiB, SW power cap)
 * for whatever fields servelab asks (once, also when asked to loop with -lms), so the runner's preflight and telemetry wiring can be run on a CPU machine.
 * The parsing itself is tested on the captures directly (telemetry-parse.test.ts).
 */
function replayingNvidiaSmi(dir: string): void {
  const captured = parseQueryCsv(fixture('lms-busy.csv'), CAPTURE_FIELDS).at(-1)!;
  const values: Record<string, string> = { ...captured, 'power.default_limit': '700.00', 'clocks.applications.graphics': '1980' };
  const row = (fields: readonly string[]): string => fields.map((field) => values[field] ?? '[N/A]').join(', ');
  const script = [
    '#!/bin/sh',
    'case "$1" in',
    ...[SAMPLE_FIELDS, STREAM_FIELDS, PREFLIGHT_FIELDS, NVIDIA_SMI_FIELDS].map((fields) => `  --query-gpu=${fields.join(',')}) echo "${row(fields)}" ;;`),
    '  --query-compute-apps=*) ;;',
    '  *) exit 2 ;;',
    'esac',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'nvidia-smi'), script);
  chmodSync(join(dir, 'nvidia-smi'), 0o755);
}

describe('preflight and GPU telemetry in a run (nvidia-smi replaying the busy H200 capture)', () => {
  test('strict stops before the server starts, naming the foreign memory and the power cap; warn measures and records them', async (t) => {
    const dir = tempDir(t, 'preflight-run');
    replayingNvidiaSmi(dir);
    const store = join(dir, 'servelab.db');
    const previousPath = process.env.PATH;
    process.env.PATH = `${dir}:${previousPath ?? ''}`;
    t.after(() => (process.env.PATH = previousPath));

    const strict = await cli(['run', writeExperiment(dir, 'strict.yaml', { name: 'strict', preflight: 'strict', trials: 1 })], { store });
    assert.notEqual(strict.code, 0);
    assert.match(
      strict.stderr,
      /preflight failed: GPU 0: 31\.0 GiB of memory in use before the server starts; GPU 0: clock-event reasons active: SW power cap/,
    );
    assert.match(strict.stderr, /preflight: warn/);
    assert.doesNotMatch(strict.stderr, /starting server/);

    const warn = await cli(['run', writeExperiment(dir, 'warn.yaml', { name: 'warn', trials: 1, telemetry: { interval: 0.1 } })], { store });
    assert.equal(warn.code, 0, warn.stderr);
    assert.match(warn.stderr, /preflight warning: GPU 0: 31\.0 GiB of memory in use/);
    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const fingerprint = JSON.parse(
      (db.prepare('SELECT f.json FROM fingerprints f JOIN trials t ON t.fingerprint_id = f.id').get() as { json: string }).json,
    ) as {
      preflight: Record<string, string>;
      gpus: Array<{ busId?: string }>;
    };
    // host.load may join them: this test machine is shared and often busy.
    assert.deepEqual(
      Object.keys(fingerprint.preflight).filter((key) => key.startsWith('gpu')),
      ['gpu0.foreignMemory', 'gpu0.clockEvents'],
    );
    assert.equal(fingerprint.gpus[0]?.busId, '00000000:00:06.0');
    const summary = JSON.parse((db.prepare('SELECT summary_json FROM trial_telemetry').get() as { summary_json: string }).summary_json) as {
      gpus: Array<{ reasonShare: Record<string, number>; memoryUsedMaxMiB: number }>;
    };
    assert.equal(summary.gpus[0]?.reasonShare['SW power cap'], 1);
    assert.equal(summary.gpus[0]?.memoryUsedMaxMiB, 31731);
  });

  test('energy and cost per trial: the replayed 689 W reading over the level gives J/tok, tok/J and $/Mtok; metric: joulesPerToken', async (t) => {
    const dir = tempDir(t, 'energy-run');
    replayingNvidiaSmi(dir);
    const store = join(dir, 'servelab.db');
    const previousPath = process.env.PATH;
    process.env.PATH = `${dir}:${previousPath ?? ''}`;
    t.after(() => (process.env.PATH = previousPath));
    const file = writeExperiment(dir, 'energy.yaml', {
      name: 'energy',
      trials: 2,
      metric: 'joulesPerToken',
      cost: { gpuHourUsd: 3.6 },
      telemetry: { interval: 0.1 },
      preflight: 'off',
    });
    const run = await cli(['run', file], { store });
    assert.equal(run.code, 0, run.stderr);
    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const watts = Number(parseQueryCsv(fixture('lms-busy.csv'), CAPTURE_FIELDS).at(-1)!['power.draw']);
    const rows = db.prepare('SELECT metrics_json FROM trials ORDER BY id').all() as Array<{ metrics_json: string }>;
    assert.equal(rows.length, 2);
    for (const row of rows) {
      const metrics = JSON.parse(row.metrics_json) as Record<string, number>;
      const rate = metrics.outputTokensPerSecond!;
      assert.equal(metrics.powerW, watts);
      assert.ok(Math.abs(metrics.joulesPerToken! - watts / rate) < 1e-9 * metrics.joulesPerToken!, JSON.stringify(metrics));
      assert.ok(Math.abs(metrics.tokensPerJoule! * metrics.joulesPerToken! - 1) < 1e-12);
      // 3.60 $ per GPU hour, 1 GPU: 1e6 tokens take 1e6 / rate seconds = 1000 / rate dollars.
      assert.ok(Math.abs(metrics.usdPerMillionTokens! - 1000 / rate) < 1e-9 * metrics.usdPerMillionTokens!);
    }
    const show = await cli(['show', '1'], { store });
    assert.match(show.stdout, /metric: joulesPerToken \(J\/tok\)/);
    assert.match(show.stdout, /variant\s+workload\s+GPU W\s+J\/tok\s+\$\/Mtok\n-.*\nbaseline\s+single-stream\s+689\s+[\d.]+\s+[\d.]+\n/);
  });
});
