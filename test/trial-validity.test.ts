/** levelValidity: the one judgement of whether a level's result is a valid measurement. Pure. */

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { levelValidity } from '../src/experiment/analysis/trial-validity.js';
import { chooseCount, countDisagreement } from '../src/load/request.js';
import { tooManyFailures } from '../src/load/run.js';
import { summarizeLevel } from '../src/metrics/summary.js';
import type { LevelResult, RequestSample } from '../src/metrics/types.js';

function sample(index: number, extra: Partial<RequestSample> = {}): RequestSample {
  return { index, sentAtMs: 1000 + index * 100, inputTokens: 8, outputTokens: 40, requestedTokens: 40, itlMs: [1], ttftMs: 10, e2eMs: 50, ...extra };
}

function level(samples: RequestSample[], extra: Partial<LevelResult> = {}): LevelResult {
  return { ...summarizeLevel({ label: 'c=4', durationS: 1, samples, tokenCounts: { method: 'server-usage', trusted: false } }), ...extra };
}

const strict = { ignoreEos: true, maxFailedFraction: 0 };
const ten = (extra: Partial<RequestSample> = {}) => Array.from({ length: 10 }, (_, index) => sample(index, extra));

test('a clean level is valid', () => {
  assert.equal(levelValidity(level(ten()), strict), undefined);
});

test('failures and resends each against maxFailedFraction; aborted requests are neither', () => {
  const failed = [...ten().slice(1), sample(9, { error: { kind: 'http-5xx', message: 'HTTP 500' }, e2eMs: undefined })];
  assert.match(levelValidity(level(failed), strict) ?? '', /^1 of 10 requests failed \(http-5xx 1\), more than maxFailedFraction 0 allows/);
  assert.equal(levelValidity(level(failed), { ...strict, maxFailedFraction: 0.1 }), undefined);
  const resent = ten().map((s, i) => (i < 2 ? { ...s, resent: true as const } : s));
  assert.match(levelValidity(level(resent), { ...strict, maxFailedFraction: 0.1 }) ?? '', /^2 of 10 requests were sent again/);
  const aborted = [...ten().slice(1), sample(9, { error: { kind: 'aborted', message: 'Ctrl-C' } })];
  assert.equal(levelValidity(level(aborted), strict), undefined);
});

test('no output, nothing completed, a stopped level', () => {
  const empty = ten({ error: { kind: 'no-output', message: 'none' }, outputTokens: 0 });
  assert.equal(levelValidity(level(empty), { ...strict, maxFailedFraction: 1 }), 'the server generated no output tokens for 10 of 10 requests');
  assert.equal(levelValidity(level([]), strict), 'no request was measured');
  assert.equal(levelValidity(level(ten(), { stopped: 'stopped after 1 of 10 requests failed' }), strict), 'stopped after 1 of 10 requests failed');
});

test('early stop: invalid with ignore_eos unless accepted; names the setting as the caller spells it', () => {
  const short = level(ten({ outputTokens: 16 }));
  assert.match(
    levelValidity(short, strict) ?? '',
    /^early-stop: 16\.0 of 40\.0 tokens per request \(10 requests stopped short\).*client\.requireFullOutput: false/,
  );
  assert.match(levelValidity(short, { ...strict, names: { requireFullOutput: '--no-require-full-output' } }) ?? '', /--no-require-full-output accepts it/);
  assert.equal(levelValidity(short, { ...strict, requireFullOutput: false }), undefined);
  assert.equal(levelValidity(short, { ...strict, ignoreEos: false }), undefined);
});

test('over-length: more than max_tokens is invalid whatever ignore_eos and requireFullOutput say; a tokenizer count gets its tolerance', () => {
  const over = level(ten({ outputTokens: 80 }));
  assert.deepEqual(over.outputLength, { requestedMean: 40, generatedMean: 80, shortRequests: 0, overLengthRequests: 10 });
  const reason = /^over-length: 80\.0 of 40\.0 tokens per request \(10 requests over their max_tokens, counted by server-usage\): .*client\.tokenizer/;
  assert.match(levelValidity(over, strict) ?? '', reason);
  assert.match(levelValidity(over, { ...strict, ignoreEos: false }) ?? '', reason);
  assert.match(levelValidity(over, { ...strict, requireFullOutput: false }) ?? '', reason);
  const byTokenizer = (outputTokens: number) =>
    summarizeLevel({ label: 'c=4', durationS: 1, samples: ten({ outputTokens }), tokenCounts: { method: 'tokenizer', trusted: false } });
  assert.equal(levelValidity(byTokenizer(41), strict), undefined, 'a boundary token of a local tokenizer');
  assert.match(levelValidity(byTokenizer(42), strict) ?? '', /^over-length: .*counted by tokenizer/);
  assert.equal(level(ten({ outputTokens: 41 })).outputLength?.overLengthRequests, 10, "the server's own count is exact");
});

test('token counts: a disagreement is invalid unless a source is trusted; a speculating server may exceed its events', () => {
  const lying = ten({ tokenCountDisagreement: { usage: 80, stream: 40 }, outputTokens: 80, requestedTokens: 80 });
  assert.match(
    levelValidity(level(lying), strict) ?? '',
    /server usage 800 output tokens, the stream 400 token events \(10 of 10 requests\).*client\.tokenCounts/,
  );
  const trusted = summarizeLevel({ label: 'c=4', durationS: 1, samples: lying, tokenCounts: { method: 'server-usage', trusted: true } });
  assert.equal(levelValidity(trusted, strict), undefined);
  const speculating = summarizeLevel({
    label: 'c=4',
    durationS: 1,
    samples: lying,
    spec: { source: 'x' },
    tokenCounts: { method: 'server-usage', trusted: false },
  });
  assert.equal(speculating.tokenCounts!.disagreeing, 0);
  const impossible = ten({ tokenCountDisagreement: { usage: 20, stream: 40 }, outputTokens: 20 });
  const speculatingLow = summarizeLevel({
    label: 'c=4',
    durationS: 1,
    samples: impossible,
    spec: { source: 'x' },
    tokenCounts: { method: 'server-usage', trusted: false },
  });
  assert.equal(speculatingLow.tokenCounts!.disagreeing, 10, 'usage below the events is impossible even when speculating');
});

test('count disagreement tolerates one event, a tokenizer 2%; the trusted source wins when it has a count', () => {
  assert.equal(countDisagreement({ usage: 41, stream: 40 }), undefined);
  assert.deepEqual(countDisagreement({ usage: 42, stream: 40 }), { usage: 42, stream: 40 });
  assert.equal(countDisagreement({ usage: 200, stream: 200, tokenizer: 196 }), undefined);
  assert.deepEqual(countDisagreement({ usage: 200, stream: 200, tokenizer: 190 }), { usage: 200, stream: 200, tokenizer: 190 });
  assert.equal(countDisagreement({ stream: 40 }), undefined);
  // Tokens of several words (seen on a real llama-server): usage and events agree, so the words do not overrule them.
  assert.equal(countDisagreement({ usage: 96, stream: 96, words: 182 }), undefined);
  assert.deepEqual(countDisagreement({ usage: 60, stream: 40, words: 120 }), { usage: 60, stream: 40, words: 120 });
  assert.deepEqual(chooseCount({ usage: 80, stream: 40 }), { method: 'server-usage', tokens: 80 });
  assert.deepEqual(chooseCount({ usage: 80, stream: 40 }, 'stream'), { method: 'stream-chunks', tokens: 40 });
  assert.deepEqual(chooseCount({ stream: 40, tokenizer: 41 }, 'usage'), { method: 'tokenizer', tokens: 41 });
});

test('a level becomes invalid, and stops, at the first failure beyond the allowed fraction', () => {
  assert.equal(tooManyFailures(1, 10, undefined), undefined);
  assert.equal(tooManyFailures(1, 10, 0.1), undefined);
  assert.match(
    tooManyFailures(2, 10, 0.1, 'timeout: x') ?? '',
    /^stopped after 2 of 10 requests failed, more than maxFailedFraction 0\.1 allows \(first: timeout: x\)/,
  );
});

test('a cold-cache trial whose first request found more than 5% of its prompt (plus a 16-token opening) cached is invalid; warm or unreported is not judged', () => {
  const warmish = level(ten({ inputTokens: 400, cachedTokens: 60 })); // 15% of every prompt, the first request's too
  assert.deepEqual(warmish.prefixCache, {
    hitRate: 0.15,
    cachedTokens: 600,
    promptTokens: 4000,
    reporting: 10,
    firstRequestHitRate: 0.15,
    firstRequestPromptTokens: 400,
  });
  assert.match(
    levelValidity(warmish, { ...strict, coldCache: 'cold' }) ?? '',
    /^prefix cache: 15% of 4,000 prompt tokens cached \(10 requests reported\), 15% for its first request although cache: cold \(at most 5% plus 16 opening tokens\): a warm cache it should not have is not a measurement$/,
  );
  // BOS + the salt's 4 words, left by the trial's own warm-up (a real llama-server: 5 of a 37-token prompt).
  assert.equal(levelValidity(level(ten({ inputTokens: 37, cachedTokens: 5 })), { ...strict, coldCache: 'cold' }), undefined);
  // A shared system prompt: every request after the first reuses what the trial's own first request left.
  const sharedPrefix = level(ten().map((s, i) => ({ ...s, cachedTokens: i === 0 ? 0 : 6 })));
  assert.ok(sharedPrefix.prefixCache!.hitRate > 0.5);
  assert.equal(levelValidity(sharedPrefix, { ...strict, coldCache: 'cold' }), undefined);
  assert.match(levelValidity(warmish, { ...strict, coldCache: 'reset' }) ?? '', /although cache: reset/);
  assert.equal(levelValidity(warmish, strict), undefined, 'cache: warm');
  assert.equal(levelValidity(level(ten({ cachedTokens: 0 })), { ...strict, coldCache: 'cold' }), undefined);
  assert.equal(levelValidity(level(ten()), { ...strict, coldCache: 'cold' }), undefined, 'a server that reports nothing is not judged');
  assert.equal(level(ten()).prefixCache, undefined);
});
