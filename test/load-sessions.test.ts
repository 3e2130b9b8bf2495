/** Session and shared-prefix scheduling, their figures and the cold-trial rule with them. Pure (one temp file). */

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { workloadFromFlags } from '../src/cli/commands/bench-options.js';
import { levelValidity } from '../src/experiment/analysis/trial-validity.js';
import { workNotes } from '../src/experiment/analysis/work-notes.js';
import { saltPrompts } from '../src/load/prompts.js';
import { groupSessions } from '../src/load/session-loop.js';
import { conversationTurn, parseThinkTime, sampleThinkMs, sessionTurns } from '../src/load/sessions.js';
import { designedHitRate, sharedPrefixPrompts } from '../src/load/shared-prefix.js';
import type { SessionsSource, SharedPrefixSource } from '../src/load/types.js';
import { summarizeLevel } from '../src/metrics/summary.js';
import type { RequestSample } from '../src/metrics/types.js';
import { cacheAnswer, cachedPrefixTokens, PrefixCache } from '../src/simulate/prefix-cache.js';
import type { TrialRecord } from '../src/store/types.js';
import { UserError } from '../src/util/errors.js';
import { mulberry32 } from '../src/util/random.js';

const fixed = (value: number) => ({ kind: 'fixed' as const, value });
const plain = { chat: false };

const sessions = (extra: Partial<SessionsSource> = {}): SessionsSource => ({
  kind: 'sessions',
  turns: 3,
  inputTokens: fixed(5),
  outputTokens: fixed(4),
  thinkTime: { kind: 'fixed', ms: 250 },
  seed: 1,
  ...extra,
});

test('think time: a duration, exponential:MEAN, or a usage error', () => {
  assert.deepEqual(parseThinkTime('2s'), { kind: 'fixed', ms: 2000 });
  assert.deepEqual(parseThinkTime('0'), { kind: 'fixed', ms: 0 });
  assert.deepEqual(parseThinkTime('exponential:500ms'), { kind: 'exponential', meanMs: 500 });
  assert.throws(() => parseThinkTime('soon'), /invalid think time "soon"/);
  const random = mulberry32(4);
  const draws = Array.from({ length: 4000 }, () => sampleThinkMs({ kind: 'exponential', meanMs: 100 }, random));
  const mean = draws.reduce((a, b) => a + b, 0) / draws.length;
  assert.ok(mean > 90 && mean < 110, `mean ${mean}`);
});

test('each part gets whole sessions, its last one cut short; no part starts mid-conversation', () => {
  const turns = sessionTurns(sessions(), [1, 7], plain);
  assert.deepEqual(
    turns.map((turn) => [turn.session!.id, turn.session!.turn]),
    [
      [0, 0], // the warm-up: one turn of a session of its own
      [1, 0],
      [1, 1],
      [1, 2],
      [2, 0],
      [2, 1],
      [2, 2],
      [3, 0],
    ],
  );
  assert.ok(turns.every((turn) => turn.maxTokens === 4 && turn.inputTokens === 5 && turn.prompt.split(' ').length === 5));
  assert.deepEqual(
    turns.map((turn) => turn.session!.thinkMs),
    [0, 0, 250, 250, 0, 250, 250, 0],
    'no wait before a first turn',
  );
  assert.deepEqual(groupSessions(turns.slice(1)), [[0, 1, 2], [3, 4, 5], [6]]);
});

test('sessions from a ShareGPT file send its human turns (at most `turns`), not its recorded answers', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-sessions-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'chats.json');
  const conversation = (name: string, humans: number) => ({
    conversations: Array.from({ length: humans }, (_, i) => [
      { from: 'human', value: `${name} question ${i + 1}` },
      { from: 'gpt', value: `recorded answer ${i + 1}` },
    ]).flat(),
  });
  writeFileSync(path, JSON.stringify([conversation('a', 4), { conversations: [{ from: 'gpt', value: 'orphan' }] }, conversation('b', 1)]));
  const turns = sessionTurns(sessions({ path, turns: 2 }), [5], plain);
  assert.ok(
    turns.every((turn) => /^[ab] question \d$/.test(turn.prompt)),
    'human turns only',
  );
  const byId = groupSessions(turns).map((indices) => indices.map((index) => turns[index]!.prompt));
  // Conversations in seeded order, cycled: b (its one human turn), a (its first two of four), b, a cut short.
  assert.deepEqual(byId, [['b question 1'], ['a question 1', 'a question 2'], ['b question 1'], ['a question 1']]);
});

test('the next turn extends the previous turn: chat messages, and text with User/Assistant labels from the first turn on', () => {
  const [first, second] = sessionTurns(sessions(), [2], plain);
  const one = conversationTurn([], first!, plain);
  assert.equal(one.prompt, `User: ${first!.prompt}\n\nAssistant:`);
  const history = [
    { role: 'user' as const, content: first!.prompt },
    { role: 'assistant' as const, content: ' the answer' },
  ];
  const two = conversationTurn(history, second!, plain);
  assert.ok(two.prompt.startsWith(`${one.prompt} the answer`), 'turn 1 prompt + its answer is a prefix of turn 2');
  assert.deepEqual(two.messages, [...history, { role: 'user', content: second!.prompt }]);
  assert.deepEqual(two.session, second!.session);
});

test('salting a run opens each conversation once, at its first turn', () => {
  const turns = sessionTurns(sessions(), [3], plain);
  const salted = saltPrompts(turns, 9);
  assert.notEqual(salted[0]!.prompt, turns[0]!.prompt);
  assert.equal(salted[1], turns[1]);
  assert.equal(salted[2], turns[2]);
});

const shared: SharedPrefixSource = {
  kind: 'shared-prefix',
  prefixes: 2,
  prefixTokens: 30,
  questionsPerPrefix: 3,
  questionTokens: 6,
  outputTokens: fixed(4),
  seed: 0,
};

test('shared prefixes: round-robin over the documents, each hit after its first use; every part its own documents', () => {
  const prompts = sharedPrefixPrompts(shared, [6, 4], plain);
  const documentOf = (prompt: string) => prompt.split('\n\n')[0]!;
  const documents = prompts.map((item) => documentOf(item.prompt));
  assert.equal(documents[0], documents[2]);
  assert.equal(documents[2], documents[4]);
  assert.equal(documents[1], documents[3]);
  assert.notEqual(documents[0], documents[1]);
  assert.ok(!documents.slice(6).some((document) => documents.slice(0, 6).includes(document)), 'the second part shares nothing with the first');
  assert.deepEqual(
    prompts.map((item) => item.targetCachedTokens),
    [0, 0, 30, 30, 30, 30, 0, 0, 30, 30],
  );
  assert.ok(prompts.every((item) => item.inputTokens === 36));
  // Designed over one full set: 4 of 6 requests find 30 of their 36 tokens.
  assert.equal(designedHitRate(shared), (2 / 3) * (30 / 36));
  const salted = saltPrompts(prompts, 5);
  assert.equal(salted[2]!.targetCachedTokens, 34, 'the salt words are shared too');
  assert.equal(salted[0]!.targetCachedTokens, 0);
});

const sample = (index: number, extra: Partial<RequestSample>): RequestSample => ({
  index,
  sentAtMs: 1000 + index,
  inputTokens: 36,
  outputTokens: 4,
  itlMs: [1],
  ttftMs: 10,
  e2eMs: 20,
  ...extra,
});

test('a level of sessions: TTFT p50 by turn, sessions a failed turn ended, the designed hit rate beside the achieved one', () => {
  const samples = [
    sample(0, { turn: 1, ttftMs: 100, targetCachedTokens: 0, cachedTokens: 0 }),
    sample(1, { turn: 2, ttftMs: 30, targetCachedTokens: 30, cachedTokens: 24 }),
    sample(2, { turn: 1, ttftMs: 120, targetCachedTokens: 0, cachedTokens: 0 }),
    sample(3, { turn: 2, error: { kind: 'http-5xx', message: 'HTTP 500' }, ttftMs: undefined, e2eMs: undefined }),
    sample(4, { turn: 1, ttftMs: 110, targetCachedTokens: 0, cachedTokens: 0 }),
    sample(5, { turn: 2, ttftMs: 40, targetCachedTokens: 30, cachedTokens: 30 }),
  ];
  const result = summarizeLevel({ label: 'c=2', durationS: 1, samples });
  assert.deepEqual(result.turns, {
    ttftByTurn: [
      { turn: 1, count: 3, p50Ms: 110 },
      { turn: 2, count: 2, p50Ms: 35 },
    ],
    sessions: 3,
    endedByFailure: 1,
  });
  assert.equal(result.prefixCache!.targetHitRate, 60 / 180);
  assert.equal(result.prefixCache!.hitRate, 54 / 180);
});

test('cold trial judged by server counters: a workload that reuses its own prefixes may hit its designed rate, no more', () => {
  const samples = Array.from({ length: 6 }, (_, index) => sample(index, { targetCachedTokens: index < 2 ? 0 : 30 }));
  const base = summarizeLevel({ label: 'c=2', durationS: 1, samples });
  const counters = (hitRate: number) => ({
    ...base,
    prefixCache: { hitRate, cachedTokens: 0, promptTokens: 216, reporting: 0, counters: 'vllm:prefix_cache_hits / _queries', targetHitRate: 120 / 216 },
  });
  const options = { ignoreEos: true, maxFailedFraction: 0, coldCache: 'cold' as const };
  assert.equal(levelValidity(counters(0.55), options), undefined);
  assert.match(levelValidity(counters(0.9), options) ?? '', /target 56%.*at most its designed 56% plus 5%/);
  const { targetHitRate: _, ...plainCounters } = counters(0.3).prefixCache;
  assert.match(levelValidity({ ...base, prefixCache: plainCounters }, options) ?? '', /at most 5%\)/);
});

test("the simulator's prefix cache keeps an answer with its prompt: the conversation's next turn finds both", () => {
  const cache = new PrefixCache(16);
  const turn1 = { messages: [{ role: 'user', content: words(40) }] };
  assert.equal(cachedPrefixTokens(cache, turn1, 40), 0);
  const answer = ` ${words(30)}`;
  cacheAnswer(cache, turn1, answer);
  const turn2 = { messages: [...turn1.messages, { role: 'assistant', content: answer }, { role: 'user', content: 'next question' }] };
  const cached = cachedPrefixTokens(cache, turn2, 72);
  assert.ok(cached > 55, `${cached} of 72 tokens: the first turn (40) and its answer (30)`);
  // A text prompt: the answer appended, as the next turn's text continues.
  cacheAnswer(cache, { prompt: 'User: hello there\n\nAssistant:' }, ' hi, how can I help?');
  assert.ok(cachedPrefixTokens(cache, { prompt: 'User: hello there\n\nAssistant: hi, how can I help?\n\nUser: more\n\nAssistant:' }, 14) >= 8);
});

test('show and the report: TTFT p50 by turn and designed vs achieved hit rate per variant', () => {
  const trial = (ttft: number[], hit: number) =>
    ({
      variant: 'chat',
      workload: 'c=4',
      metrics: { ttftMedianByTurnMs: ttft, prefixCacheHitRate: hit, prefixCacheTargetHitRate: 0.6 },
    }) as unknown as TrialRecord;
  assert.deepEqual(workNotes([trial([400, 30], 0.5), trial([420, 50, 45], 0.7)]), [
    'chat c=4: TTFT p50 by turn 1: 410 ms, 2: 40.0 ms, 3: 45.0 ms (mean over 2 of 2 trials)',
    'chat c=4: prefix cache hit 60% of prompt tokens, target 60% (mean over 2 of 2 trials)',
  ]);
});

function words(count: number): string {
  return Array.from({ length: count }, (_, index) => `w${index}`).join(' ');
}

test('bench --sessions N: fewer requests than N sessions of T turns is refused (the level would say c=N with fewer in flight)', () => {
  const flags = { sessions: '4', turns: '2' };
  assert.throws(
    () => workloadFromFlags({ ...flags, requests: '2' }),
    (error: unknown) =>
      error instanceof UserError && error.exitCode === 2 && /--requests 2 makes 1 session\(s\) of 2 turns, fewer than the 4 --sessions/.test(error.message),
  );
  assert.deepEqual(workloadFromFlags({ ...flags, requests: '7' }), { kind: 'concurrency', concurrency: 4, requests: 7 });
  assert.deepEqual(workloadFromFlags(flags), { kind: 'concurrency', concurrency: 4, requests: 16 });
  // ShareGPT conversations may be shorter than --turns: the count of sessions is the file's to say.
  assert.equal(workloadFromFlags({ ...flags, requests: '2', dataset: 'chats.json' }).kind, 'concurrency');
});
