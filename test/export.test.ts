/**
 * `servelab export` end to end: a real run on the simulator, each format written by the CLI as a child process and
 * read back with a real parser (csv-parse, JSON, hyparquet), every figure checked against `servelab show --json`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { parse as parseCsv } from 'csv-parse/sync';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { median } from 'simple-statistics';
import type { TrialRecord } from '../src/store/types.js';
import { cli, simCommand, writeExperiment } from './support-experiment.js';

type Row = Record<string, unknown>;

const NO_CRASH = /internal error|SyntaxError|\n\s+at /;
const ACCURACY_SAMPLE = fileURLToPath(new URL('../../examples/accuracy/arith.jsonl', import.meta.url));

describe('servelab export', () => {
  let dir = '';
  let store = '';
  let trials: TrialRecord[] = [];
  const run = (args: string[]) => cli(['export', '1', ...args], { store });

  after(() => rmSync(dir, { recursive: true, force: true }));
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'servelab-export-'));
    store = join(dir, 'servelab.db');
    // Two variants (one with a grid parameter and speculative-decoding figures) × two levels × two trials.
    const file = writeExperiment(dir, 'export.yaml', {
      name: 'export',
      server: { command: simCommand(), readyTimeout: '5m' },
      workloads: [{ kind: 'sweep', concurrencies: [1, 2], requestsPerLevel: 3 }],
      trials: 2,
      variants: { baseline: {} },
      grid: [{ name: 'spec-k{k}', params: { k: [3] }, args: ['--spec-draft-tokens', '{k}', '--spec-acceptance', '0.8'] }],
    });
    const ran = await cli(['run', file], { store, timeoutMs: 150_000 });
    assert.equal(ran.code, 0, ran.stderr);
    const shown = await cli(['show', '1', '--json'], { store });
    assert.equal(shown.code, 0, shown.stderr);
    trials = (JSON.parse(shown.stdout) as { trials: TrialRecord[] }).trials;
    assert.equal(trials.length, 8);
  });

  /** A trial-level row against the trial `show` printed: ids, parameters and every stored figure. */
  function checkTrialRows(rows: Row[], read: (value: unknown) => unknown): void {
    assert.equal(rows.length, trials.length);
    for (const trial of trials) {
      const row = rows.find((candidate) => Number(read(candidate.trialId)) === trial.id)!;
      assert.ok(row, `trial ${trial.id} exported`);
      assert.equal(read(row.variant), trial.variant);
      assert.equal(read(row.workload), trial.workload);
      // Counted from 1 like every view ("block 1"), `show --json` included.
      assert.equal(Number(read(row.block)), trial.block);
      assert.equal(Number(read(row.repetition)), trial.repetition);
      assert.equal(read(row['param.k']), trial.params.k ?? null);
      for (const [key, value] of Object.entries(trial.metrics)) {
        if (key === 'acceptanceByPosition') {
          (value as number[]).forEach((share, index) => assert.equal(read(row[`${key}.${index}`]), share));
        } else if (typeof value === 'object' && value !== null) {
          // Nested figures (tokenCounts, outputLength, rate, byCategory) flattened with dots.
          for (const [field, inner] of Object.entries(value)) {
            if (typeof inner !== 'object') assert.equal(read(row[`${key}.${field}`]), inner, `trial ${trial.id} ${key}.${field}`);
          }
        } else {
          assert.equal(read(row[key]), value, `trial ${trial.id} ${key}`);
        }
      }
      if (trial.metrics.acceptanceRate === undefined) assert.equal(read(row.acceptanceRate), null);
    }
  }

  /** Request rows against each trial's figures: one per stored request; the median TTFT is the trial's. */
  function checkRequestRows(rows: Row[], read: (value: unknown) => unknown): void {
    assert.equal(
      rows.length,
      trials.reduce((sum, trial) => sum + trial.metrics.completed + trial.metrics.failed, 0),
    );
    for (const trial of trials) {
      const own = rows.filter((row) => Number(read(row.trialId)) === trial.id && read(row.errorKind) === null);
      assert.equal(own.length, trial.metrics.completed);
      assert.equal(median(own.map((row) => Number(read(row.ttftMs)))), trial.metrics.ttftMedianMs, `trial ${trial.id} median TTFT`);
      assert.equal(median(own.map((row) => Number(read(row.e2eMs)))), trial.metrics.e2eMedianMs, `trial ${trial.id} median e2e`);
    }
  }

  const csvCell = (value: unknown): unknown => {
    if (value === '') return null;
    const number = Number(value);
    return typeof value === 'string' && value !== '' && Number.isFinite(number) && !/^\d{4}-/.test(value) ? number : value;
  };

  test('trials as CSV, JSON Lines and Parquet carry the figures `show` prints', async () => {
    const csv = await run([]);
    assert.equal(csv.code, 0, csv.stderr);
    checkTrialRows(parseCsv(csv.stdout, { columns: true }) as Row[], csvCell);

    const jsonl = await run(['--format', 'jsonl']);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const objects = jsonl.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Row);
    checkTrialRows(objects, (value) => value);
    assert.equal(new Set(objects.map((row) => Object.keys(row).join())).size, 1, 'every row has every column');

    const out = join(dir, 'trials.parquet');
    const parquet = await run(['--format', 'parquet', '--out', out]);
    assert.equal(parquet.code, 0, parquet.stderr);
    assert.match(parquet.stdout, /run 1: 8 trial rows → /);
    checkTrialRows(await parquetReadObjects({ file: await asyncBufferFromFile(out) }), (value) => value);
  });

  test('requests as CSV, JSON Lines and Parquet, one row per stored request', async () => {
    const csv = await run(['--level', 'request']);
    assert.equal(csv.code, 0, csv.stderr);
    const csvRows = parseCsv(csv.stdout, { columns: true }) as Row[];
    checkRequestRows(csvRows, csvCell);
    assert.ok(Array.isArray(JSON.parse(csvRows[0]!.itlMs as string)), 'ITL gaps as a JSON list');

    const jsonl = await run(['--level', 'request', '--format', 'jsonl', '--out', join(dir, 'requests.jsonl')]);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const lines = readFileSync(join(dir, 'requests.jsonl'), 'utf8').trimEnd().split('\n');
    checkRequestRows(
      lines.map((line) => JSON.parse(line) as Row),
      (value) => value,
    );

    const out = join(dir, 'requests.parquet');
    const parquet = await run(['--level', 'request', '--format', 'parquet', '--out', out]);
    assert.equal(parquet.code, 0, parquet.stderr);
    const rows = await parquetReadObjects({ file: await asyncBufferFromFile(out) });
    checkRequestRows(rows, (value) => value);
    assert.ok(Array.isArray(rows[0]!.itlMs), 'ITL gaps as a JSON column');
  });

  test('vLLM bench-serve results: one per variant and level, totals and pooled latencies of its trials', async () => {
    const plain = await run(['--format', 'vllm-bench']);
    assert.equal(plain.code, 0, plain.stderr);
    const results = plain.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Row);
    assert.equal(results.length, 4);
    const detailed = await run(['--format', 'vllm-bench', '--level', 'request']);
    assert.equal(detailed.code, 0, detailed.stderr);
    const withLists = detailed.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Row);
    for (const [index, result] of results.entries()) {
      const own = trials.filter((trial) => trial.variant === result.servelab_variant && trial.workload === result.servelab_workload);
      assert.deepEqual(
        result.servelab_trial_ids,
        own.map((trial) => trial.id).sort((a, b) => a - b),
      );
      assert.equal(
        result.completed,
        own.reduce((sum, trial) => sum + trial.metrics.completed, 0),
      );
      assert.equal(result.failed, 0);
      assert.equal(result.max_concurrency, own[0]!.concurrency);
      assert.equal(result.request_rate, 'inf');
      const duration = own.reduce((sum, trial) => sum + trial.metrics.completed / trial.metrics.requestsPerSecond, 0);
      assert.ok(Math.abs((result.duration as number) - duration) < 1e-9);
      // Each trial's throughput times its duration is its output tokens: the pooled throughput is their sum over the summed time.
      const tokens = own.reduce((sum, trial) => sum + trial.metrics.outputTokensPerSecond * (trial.metrics.completed / trial.metrics.requestsPerSecond), 0);
      assert.equal(result.total_output_tokens, Math.round(tokens));
      assert.ok(Math.abs((result.output_throughput as number) - tokens / duration) < 1e-6);
      for (const key of ['mean', 'median', 'std', 'p99'])
        for (const metric of ['ttft', 'tpot', 'itl', 'e2el']) assert.equal(typeof result[`${key}_${metric}_ms`], 'number');
      assert.equal(result.input_lens, undefined, 'per-request lists only with --level request');
      const lists = withLists[index]!;
      assert.equal((lists.ttfts as number[]).length, result.num_prompts);
      // The median of the pooled TTFTs (seconds in vLLM's lists) is the result's median_ttft_ms.
      assert.ok(Math.abs(median(lists.ttfts as number[]) * 1000 - (result.median_ttft_ms as number)) < 1e-9);
    }
  });

  test('usage errors: one line, exit 2, nothing written', async () => {
    for (const [args, message] of [
      [['--format', 'xml'], /--format must be one of csv, jsonl, parquet, vllm-bench, got "xml"/],
      [['--level', 'token'], /--level must be one of trial, request/],
      [['--format', 'parquet'], /--format parquet writes a binary file.*\n {2}next: add --out FILE/],
    ] as const) {
      const result = await run([...args]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
      assert.equal(result.stdout, '');
    }
    const notRun = await cli(['export', 'latest'], { store });
    assert.equal(notRun.code, 2);
    assert.match(notRun.stderr, /run id must be a positive integer, got "latest"/);
    const missing = await cli(['export', '7'], { store });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /run 7 is not in the store/);
  });

  // Last: it alters the store.
  test('corrupt rows are named on stderr and left out; every format still exits 0', async () => {
    const db = new Database(store);
    const [badTrial, badSampleTrial] = [trials[0]!.id, trials[1]!.id];
    db.prepare(`UPDATE trials SET metrics_json = '{"outputTokensPerSecond": 12' WHERE id = ?`).run(badTrial);
    const sample = db.prepare('SELECT rowid AS id FROM samples WHERE trial_id = ? ORDER BY idx LIMIT 1').get(badSampleTrial) as { id: number };
    db.prepare(`UPDATE samples SET itl_json = 'not json' WHERE rowid = ?`).run(sample.id);
    // SQLite keeps text in an INTEGER column: read as is, it summed to "0abc3232…" in the vLLM export.
    const badScalarTrial = trials[2]!.id;
    const scalar = db.prepare('SELECT rowid AS id FROM samples WHERE trial_id = ? ORDER BY idx LIMIT 1').get(badScalarTrial) as { id: number };
    db.prepare(`UPDATE samples SET output_tokens = 'abc' WHERE rowid = ?`).run(scalar.id);
    db.close();

    const csv = await run([]);
    assert.equal(csv.code, 0, csv.stderr);
    assert.doesNotMatch(csv.stdout + csv.stderr, NO_CRASH);
    assert.match(csv.stderr, new RegExp(`warning: left out trials row ${badTrial}, column metrics_json: not valid JSON`));
    assert.equal((parseCsv(csv.stdout, { columns: true }) as Row[]).length, trials.length - 1);

    const requests = await run(['--level', 'request', '--format', 'jsonl']);
    assert.equal(requests.code, 0, requests.stderr);
    assert.match(requests.stderr, new RegExp(`warning: left out samples row ${sample.id}, column itl_json: not valid JSON`));
    const rows = requests.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Row);
    assert.equal(rows.filter((row) => row.trialId === badSampleTrial).length, trials[1]!.metrics.completed - 1);
    assert.equal(rows.filter((row) => row.trialId === badTrial).length, 0);
    assert.match(requests.stderr, new RegExp(`warning: left out samples row ${scalar.id}, column output_tokens: .*stored "abc"`));
    assert.equal(rows.filter((row) => row.trialId === badScalarTrial).length, trials[2]!.metrics.completed - 1);
    assert.ok(
      rows.every((row) => typeof row.outputTokens === 'number'),
      'no text among the exported counts',
    );

    const vllm = await run(['--format', 'vllm-bench']);
    assert.equal(vllm.code, 0, vllm.stderr);
    const result = vllm.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Row)
      .find((candidate) => (candidate.servelab_trials_left_out as number[] | undefined)?.includes(badSampleTrial));
    assert.ok(result, 'the trial missing a request is left out of its pooled result, by id');
    assert.ok(!(result.servelab_trial_ids as number[]).includes(badSampleTrial));
    assert.doesNotMatch(vllm.stdout, /abc/);
    const scalarResult = vllm.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Row)
      .find((candidate) => (candidate.servelab_trials_left_out as number[] | undefined)?.includes(badScalarTrial));
    assert.ok(scalarResult, 'the trial with an unreadable count is left out of its pooled result, by id');
    assert.equal(typeof scalarResult.total_output_tokens, 'number');
  });
});

test('request rows carry the dataset category and the conversation turn each request was', { timeout: 150_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-export-shape-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = join(dir, 'servelab.db');
  const file = writeExperiment(dir, 'shaped.yaml', {
    name: 'shaped',
    server: { command: simCommand({ tpotMs: 1 }), readyTimeout: '5m' },
    client: { prompts: { kind: 'jsonl', path: ACCURACY_SAMPLE, maxOutputTokens: 4 }, warmupRequests: 0 },
    workloads: [{ kind: 'concurrency', concurrency: 2, requests: 6 }],
    trials: 1,
    variants: { dataset: {}, chat: { client: { prompts: { kind: 'sessions', turns: 3, inputTokens: 16, outputTokens: 4 } } } },
  });
  const ran = await cli(['run', file], { store, timeoutMs: 120_000 });
  assert.equal(ran.code, 0, ran.stderr);
  const exported = await cli(['export', '1', '--level', 'request', '--format', 'jsonl'], { store });
  assert.equal(exported.code, 0, exported.stderr);
  const rows = exported.stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as Row);
  const dataset = rows.filter((row) => row.variant === 'dataset');
  const chat = rows.filter((row) => row.variant === 'chat');
  assert.ok(dataset.length > 0 && chat.length > 0);
  const categories = new Set(['addition', 'subtraction', 'multiplication', 'word-problem']);
  for (const row of dataset) assert.ok(categories.has(row.category as string), `category ${String(row.category)}`);
  assert.deepEqual([...new Set(chat.map((row) => row.turn))].sort(), [1, 2, 3]);
});
