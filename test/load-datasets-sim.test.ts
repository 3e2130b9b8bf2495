import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { runBenchmark } from '../src/load/run.js';
import { loadTokenizer } from '../src/load/tokenizers/model.js';
import type { BenchResult } from '../src/load/types.js';
import { cli, SERVELAB, servingSimulator, tempDir, writeExperiment } from './support-experiment.js';

/** Real processes: the simulator and `servelab bench` as children, datasets as real files, per-category results. */

const BPE_DIR = fileURLToPath(new URL('../../test/fixtures/tokenizers/bpe', import.meta.url));
const CATEGORIES = ['code', 'math', 'chat'];

function run(args: string[], timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [SERVELAB, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (stdout += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    }),
  );
}

/** 12 prompts, 4 per category, output lengths 3..14 (so categories differ in e2e). */
function writeParquetDataset(path: string): void {
  const rows = Array.from({ length: 12 }, (_, index) => index);
  writeFileSync(
    path,
    Buffer.from(
      parquetWriteBuffer({
        columnData: [
          { name: 'question', data: rows.map((index) => `question number ${index} about ${CATEGORIES[index % 3]}`), type: 'STRING' },
          { name: 'out_len', data: rows.map((index) => index + 3), type: 'INT32' },
          { name: 'topic', data: rows.map((index) => CATEGORIES[index % 3]!), type: 'STRING' },
        ],
      }),
    ),
  );
}

describe('datasets and categories on real processes', () => {
  test('bench CLI on a Parquet dataset: per-category counts, output lengths and spec stats from per-request counters', async (t) => {
    const dir = tempDir(t, 'ds-parquet');
    const dataset = join(dir, 'qa.parquet');
    writeParquetDataset(dataset);
    const url = await servingSimulator(t, ['--ttft-ms', '5', '--tpot-ms', '2', '--jitter', '0', '--spec-draft-tokens', '3', '--spec-acceptance', '0.7']);
    const result = await run([
      'bench',
      url,
      '--backend',
      'llamacpp',
      '--dataset',
      dataset,
      '--dataset-field',
      'prompt=question',
      '--dataset-field',
      'outputTokens=out_len',
      '--dataset-field',
      'category=topic',
      '--concurrency',
      '3',
      '--requests',
      '12',
      '--warmup',
      '0',
      '--json',
      '--no-progress',
    ]);
    assert.equal(result.code, 0, result.stderr);
    const bench = JSON.parse(result.stdout) as BenchResult;
    const level = bench.levels[0]!;
    assert.equal(level.completed, 12);
    assert.deepEqual(
      level.categories!.map((category) => [category.category, category.completed]),
      CATEGORIES.map((name) => [name, 4]),
    );
    // Each request got the output length of its own record (3..14) and carries its category.
    const byCategory = new Map<string, number>();
    for (const sample of level.samples) byCategory.set(sample.category!, (byCategory.get(sample.category!) ?? 0) + sample.outputTokens);
    assert.deepEqual(Object.fromEntries(byCategory), { code: 3 + 6 + 9 + 12, math: 4 + 7 + 10 + 13, chat: 5 + 8 + 11 + 14 });
    // Category throughputs share the level's wall time, so they add up to the level's.
    const sum = level.categories!.reduce((total, category) => total + category.outputTokensPerSecond, 0);
    assert.ok(Math.abs(sum - level.outputTokensPerSecond) < 1e-6 * level.outputTokensPerSecond);
    // Spec stats per category come from llama.cpp's per-request draft counters; they add up to the level's.
    assert.match(level.spec!.source, /llama\.cpp/);
    const drafts = level.categories!.reduce((total, category) => total + category.spec!.draftTokens!, 0);
    assert.equal(drafts, level.spec!.draftTokens);
    assert.match(
      (
        await run([
          'bench',
          url,
          '--backend',
          'llamacpp',
          '--dataset',
          dataset,
          '--dataset-field',
          'prompt=question',
          '--dataset-field',
          'category=topic',
          '--requests',
          '6',
          '--concurrency',
          '2',
          '--warmup',
          '0',
          '--no-progress',
        ])
      ).stdout,
      /c=2 · math/,
    );
  });

  test('a bad record stops the CLI before any request: exit 1, one line naming file, row and field, no stack', async (t) => {
    const dir = tempDir(t, 'ds-bad');
    const dataset = join(dir, 'bad.csv');
    writeFileSync(dataset, 'prompt,max_tokens,category\nfine,4,chat\n"also, fine",-2,code\n');
    const url = await servingSimulator(t, ['--ttft-ms', '5', '--tpot-ms', '2', '--jitter', '0']);
    const result = await run(['bench', url, '--dataset', dataset, '--requests', '2', '--warmup', '0', '--no-progress']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /bad\.csv:3: field "max_tokens" \(output tokens\) must be a positive integer, got "-2"/);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
  });

  test('multi-turn ShareGPT over openai-chat: the server gets the history, prompt lengths exact by the chat template', async (t) => {
    const tokenizer = loadTokenizer(BPE_DIR);
    const bodies: Array<{ messages: Array<{ role: string; content: string }> }> = [];
    // A real HTTP server that reports no usage: counts must come from the tokenizer.
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        bodies.push(JSON.parse(body));
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const content of ['the', ' server', ' streams']) response.write(`data: ${JSON.stringify({ choices: [{ delta: { content } }] })}\n\n`);
        response.end('data: [DONE]\n\n');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dataset = fileURLToPath(new URL('../../test/fixtures/load/sharegpt-multiturn.json', import.meta.url));
    const result = await runBenchmark({
      baseUrl: url,
      backend: 'openai-chat',
      model: 'm',
      workload: { kind: 'single-stream', requests: 4 },
      prompts: { kind: 'sharegpt', path: dataset, shuffle: false },
      warmupRequests: 0,
      ignoreEos: true,
      requestTimeoutMs: 10_000,
      tokenizerPath: BPE_DIR,
      specMetrics: 'none',
    });
    assert.equal(result.tokenCountMethod, 'tokenizer');
    assert.deepEqual(
      bodies[1]!.messages.map((message) => message.role),
      ['user', 'assistant', 'user'],
    );
    const samples = result.levels[0]!.samples;
    for (const [index, sample] of samples.entries()) {
      assert.equal(sample.inputTokens, tokenizer.count(tokenizer.renderChat!(bodies[index]!.messages as never)));
      assert.equal(sample.outputTokens, tokenizer.count('the server streams'));
    }
    assert.deepEqual(
      result.levels[0]!.categories!.map((category) => category.category),
      ['chat', 'code', 'math'],
    );
  });

  test('synthetic prompts of exactly N tokens reach the server as N tokens', async (t) => {
    const tokenizer = loadTokenizer(BPE_DIR);
    const prompts: string[] = [];
    const server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        // Spec-metrics scrapes (GET /metrics) find nothing here.
        if (request.method !== 'POST') return void response.writeHead(404).end();
        prompts.push((JSON.parse(body) as { prompt: string }).prompt);
        response.writeHead(200, { 'content-type': 'text/event-stream' });
        response.end(`data: ${JSON.stringify({ choices: [{ text: 'ok' }], usage: { prompt_tokens: 1, completion_tokens: 1 } })}\n\ndata: [DONE]\n\n`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const result = await run([
      'bench',
      url,
      '--model',
      'm',
      '--tokenizer',
      BPE_DIR,
      '--input-len',
      'uniform:20,400',
      '--output-len',
      '4',
      '--single-stream',
      '6',
      '--warmup',
      '0',
      '--seed',
      '2',
      // The stub answers one token whatever was asked: prompt lengths are under test, not output lengths.
      '--no-require-full-output',
      '--json',
      '--no-progress',
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(prompts.length, 6);
    const words = await run([
      'bench',
      url,
      '--model',
      'm',
      '--input-len',
      'uniform:20,400',
      '--output-len',
      '4',
      '--single-stream',
      '6',
      '--warmup',
      '0',
      '--seed',
      '2',
      '--no-require-full-output',
      '--json',
      '--no-progress',
    ]);
    assert.equal(words.code, 0, words.stderr);
    // Same seed: the word run's prompts have N words, the tokenizer run's exactly N tokens.
    const expected = prompts.slice(6).map((prompt) => prompt.split(' ').length);
    assert.deepEqual(
      prompts.slice(0, 6).map((prompt) => tokenizer.count(prompt)),
      expected,
    );
  });

  test('experiment on a CSV dataset with categories: show and report break results down per category', async (t) => {
    const dir = tempDir(t, 'ds-experiment');
    const store = join(dir, 'servelab.db');
    const dataset = join(dir, 'prompts.csv');
    writeFileSync(dataset, `q,n,topic\n${Array.from({ length: 6 }, (_, index) => `prompt ${index},${4 + index},${index % 2 ? 'code' : 'chat'}`).join('\n')}\n`);
    const file = writeExperiment(dir, 'categories.yaml', {
      client: { prompts: { kind: 'csv', path: dataset, fields: { prompt: 'q', outputTokens: 'n', category: 'topic' } }, warmupRequests: 0 },
      workloads: [{ kind: 'concurrency', concurrency: 2, requests: 6 }],
      trials: 2,
    });
    const result = await cli(['run', file], { store, timeoutMs: 90_000 });
    assert.equal(result.code, 0, result.stderr);
    const shown = await cli(['show', '1'], { store });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /per category \(medians over trials\):/);
    assert.match(shown.stdout, /baseline\s+c=2\s+chat\s+2\s+6\s+0/);
    assert.match(shown.stdout, /baseline\s+c=2\s+code\s+2\s+6\s+0/);
    const out = join(dir, 'report');
    const report = await cli(['report', '1', '--out', out], { store });
    assert.equal(report.code, 0, report.stderr);
    const markdown = readFileSync(join(out, 'run-1.md'), 'utf8');
    assert.match(markdown, /## Per category/);
    assert.match(markdown, /\| baseline \| c=2 \| code \| 2 \| 6 \| 0 \|/);
  });
});
