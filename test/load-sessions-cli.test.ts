/**
 * Multi-turn sessions and shared prefixes end to end: a real `servelab bench` process against a spawned
 * `servelab simulate` (prefix cache on) or a recording chat server on 127.0.0.1, over real HTTP.
 */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import type { BenchResult, LevelResult } from '../src/load/types.js';
import { spawnSimulator } from '../src/simulate/child.js';
import { type CliResult, cli, tempDir } from './support-experiment.js';

/** `servelab bench ARGS --no-progress` in its own process, with a store of its own. */
function bench(t: TestContext, args: string[]): Promise<CliResult> {
  return cli(['bench', ...args, '--no-progress'], { store: join(tempDir(t, 'sessions-cli'), 'servelab.db'), timeoutMs: 60_000 });
}

async function benchLevel(t: TestContext, args: string[]): Promise<LevelResult> {
  const run = await bench(t, [...args, '--json']);
  assert.equal(run.code, 0, run.stderr);
  return (JSON.parse(run.stdout) as BenchResult).levels[0]!;
}

async function simulator(t: TestContext, args: string[]): Promise<string> {
  const sim = await spawnSimulator(['--load-ms', '0', '--jitter', '0', '--tpot-ms', '1', '--ttft-ms', '5', ...args]);
  t.after(() => sim.stop());
  await sim.waitForLine(/Uvicorn running on/, 20_000);
  return sim.url;
}

interface Recorded {
  messages: Array<{ role: string; content: string }>;
  arrivedAt: number;
  answeredAt?: number;
  answer: string;
}

/** An OpenAI chat server that answers "answer-N" to its Nth request (failing those in `fail` with a 500) and records each. */
async function recordingServer(t: TestContext, fail: readonly number[]): Promise<{ url: string; requests: Recorded[] }> {
  const requests: Recorded[] = [];
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/models') return res.end(JSON.stringify({ data: [{ id: 'rec' }] }));
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404);
      return res.end();
    }
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const record: Recorded = { messages: JSON.parse(body).messages, arrivedAt: Date.now(), answer: ` answer-${requests.length + 1}` };
      requests.push(record);
      if (fail.includes(requests.length)) {
        res.writeHead(500, { 'content-type': 'application/json' });
        return res.end('{"error": {"message": "recorded failure"}}');
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const chunk = (choices: object[], usage?: object) =>
        `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices, ...(usage && { usage }) })}\n\n`;
      const prompt = record.messages
        .map((message) => message.content)
        .join(' ')
        .trim()
        .split(/\s+/).length;
      res.write(chunk([{ index: 0, delta: { role: 'assistant', content: record.answer } }]));
      res.write(chunk([{ index: 0, delta: {}, finish_reason: 'length' }]));
      res.write(chunk([], { prompt_tokens: prompt, completion_tokens: 1, total_tokens: prompt + 1 }));
      record.answeredAt = Date.now();
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests };
}

const THINK_MS = 300;

describe('servelab bench --turns (multi-turn sessions)', () => {
  test("every next turn carries the server's own previous answers, after the think time; a failed turn ends its session", async (t) => {
    const server = await recordingServer(t, [2]);
    const args = [server.url, '--backend', 'openai-chat', '--sessions', '1', '--turns', '3', '--requests', '6', '--input-len', '4', '--output-len', '1'];
    const level = await benchLevel(t, [...args, '--think-time', `${THINK_MS}ms`, '--warmup', '0', '--no-ignore-eos', '--max-failed-fraction', '0.5']);
    const sent = server.requests;
    // Session 1: turn 1, then turn 2 fails and the session ends; session 2: turns 1 to 3. Six planned, five sent.
    assert.deepEqual(
      sent.map((request) => request.messages.length),
      [1, 3, 1, 3, 5],
    );
    assert.deepEqual(
      sent[3]!.messages.map((message) => message.role),
      ['user', 'assistant', 'user'],
    );
    assert.equal(sent[3]!.messages[1]!.content, sent[2]!.answer, "turn 2 carries turn 1's live answer");
    assert.deepEqual(sent[4]!.messages.slice(0, 3), sent[3]!.messages, 'turn 3 extends turn 2');
    assert.equal(sent[4]!.messages[3]!.content, sent[3]!.answer);
    for (const [previous, next] of [
      [sent[0]!, sent[1]!],
      [sent[2]!, sent[3]!],
      [sent[3]!, sent[4]!],
    ] as const) {
      const gap = next.arrivedAt - previous.answeredAt!;
      assert.ok(gap >= THINK_MS - 5 && gap < THINK_MS + 10_000, `think gap ${gap} ms`);
    }
    assert.deepEqual([level.completed, level.failed], [4, 1]);
    assert.deepEqual(
      level.samples.map((sample) => sample.turn),
      [1, 2, 1, 2, 3],
    );
    assert.deepEqual([level.turns!.sessions, level.turns!.endedByFailure], [2, 1]);
  });

  test('on the simulator’s prefix cache, a later turn pays only for its new words: turn 2 TTFT below turn 1', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-sessions-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const words = (count: number, word: string) => Array.from({ length: count }, () => word).join(' ');
    // A long first turn (a pasted document), then short follow-ups: how chats with a document go.
    const chats = ['alpha', 'beta', 'gamma'].map((name) => ({
      conversations: [
        { from: 'human', value: `${name} ${words(400, 'document')}` },
        { from: 'gpt', value: 'recorded' },
        { from: 'human', value: `${name} ${words(8, 'follow')}` },
        { from: 'gpt', value: 'recorded' },
        { from: 'human', value: `${name} ${words(8, 'more')}` },
      ],
    }));
    const path = join(dir, 'chats.json');
    writeFileSync(path, JSON.stringify(chats));
    const url = await simulator(t, ['--prefix-cache', '--prefill-ms-per-token', '1']);
    const args = [url, '--backend', 'openai-chat', '--dataset', path, '--sessions', '1', '--turns', '3', '--requests', '9', '--output-len', '8'];
    const level = await benchLevel(t, [...args, '--warmup', '0']);
    const [first, second, third] = level.turns!.ttftByTurn;
    t.diagnostic(`TTFT p50 by turn: ${level.turns!.ttftByTurn.map((turn) => `${turn.turn}: ${turn.p50Ms.toFixed(1)} ms`).join(', ')}`);
    t.diagnostic(`prefix cache: ${level.prefixCache!.hitRate.toFixed(3)} achieved, ${level.prefixCache!.targetHitRate!.toFixed(3)} target`);
    assert.deepEqual([first!.count, second!.count, third!.count], [3, 3, 3]);
    // Turn 1 prefills ~400 tokens at 1 ms each; turn 2 finds turn 1 and its answer cached and prefills ~10.
    assert.ok(second!.p50Ms < first!.p50Ms / 2, `turn 2 ${second!.p50Ms} ms vs turn 1 ${first!.p50Ms} ms`);
    assert.ok(Math.abs(level.prefixCache!.hitRate - level.prefixCache!.targetHitRate!) < 0.05);
  });

  test('usage errors: --sessions without --turns, sessions under an open-loop rate', async (t) => {
    const alone = await bench(t, ['http://127.0.0.1:9', '--sessions', '2']);
    assert.equal(alone.code, 2);
    assert.match(alone.stderr, /--sessions N runs multi-turn sessions: it needs --turns/);
    const rate = await bench(t, ['http://127.0.0.1:9', '--rate', '4', '--turns', '3']);
    assert.equal(rate.code, 2);
    assert.match(rate.stderr, /multi-turn sessions run in a closed loop/);
  });
});

describe('servelab bench --shared-prefixes', () => {
  test('the achieved hit rate is the designed one; another salt starts cold, the same salt again finds it warm', async (t) => {
    const url = await simulator(t, ['--prefix-cache']);
    const args = [url, '--shared-prefixes', '4', '--prefix-len', '512', '--questions-per-prefix', '8', '--question-len', '32', '--output-len', '4'];
    const run = (salt: string) => benchLevel(t, [...args, '--concurrency', '4', '--requests', '32', '--prompt-salt', salt]);
    const first = await run('1');
    const cache = first.prefixCache!;
    t.diagnostic(`shared prefixes: ${cache.hitRate.toFixed(3)} achieved, ${cache.targetHitRate!.toFixed(3)} target`);
    // 7 of 8 uses of each document hit its 512 (+4 salt) of ~548 tokens.
    assert.ok(Math.abs(cache.targetHitRate! - (7 / 8) * (516 / 552)) < 0.01, `target ${cache.targetHitRate}`);
    assert.ok(Math.abs(cache.hitRate - cache.targetHitRate!) < 0.05, `achieved ${cache.hitRate} vs target ${cache.targetHitRate}`);
    const cold = (await run('2')).prefixCache!;
    assert.ok(cold.firstRequestHitRate! < 0.05, 'another salt: the first request finds nothing');
    assert.ok(Math.abs(cold.hitRate - cold.targetHitRate!) < 0.05);
    const warm = (await run('1')).prefixCache!;
    assert.ok(warm.hitRate > warm.targetHitRate! + 0.05, `the same salt again: ${warm.hitRate} above the designed ${warm.targetHitRate}`);
  });
});
