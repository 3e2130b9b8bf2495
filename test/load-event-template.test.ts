/**
 * Templated reading of recurring stream events (src/load/event-template.ts) must be indistinguishable from parsing
 * every event: the same tokens, text, counters and failures, on streams shaped as vLLM, the simulator and
 * Python's json.dumps write them, with hostile token texts.
 */

import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, newStreamState, type StreamState } from '../src/load/backends.js';
import { buildTemplate, matchTemplate } from '../src/load/event-template.js';
import { mulberry32 } from '../src/util/random.js';

type Kind = 'openai-completions' | 'openai-chat';

/** Read a stream; `templates: false` parses every event in full (the reference). */
function read(kind: Kind, events: string[], templates: boolean) {
  const state = newStreamState(true);
  if (!templates) state.templateBuilds = Number.POSITIVE_INFINITY;
  let matched = 0;
  const outcomes = events.map((data) => {
    // A match only rewrites the template's record, which the parse below then rewrites the same way.
    if (state.template && matchTemplate(state.template, data)) matched++;
    try {
      return BACKENDS[kind].parse(data, state);
    } catch (error) {
      return `error: ${(error as Error).message}`;
    }
  });
  const { template: _template, templateBuilds: _builds, ...facts } = state as StreamState;
  return { outcomes, facts, matched };
}

const TRICKY = [' the', '"', '\\', '\\"', '\n', '\t', 'é', '日本', '😀', '\u2028', '","text":"x', '}]}', '\\u0041', ''];

function randomText(random: () => number): string {
  const pick = TRICKY[Math.floor(random() * TRICKY.length)]!;
  return random() < 0.5 ? pick : ` w${Math.floor(random() * 1000)}${pick}`;
}

function completionChunk(text: string, extra: { finish?: string; sentNs?: number; spaced?: boolean } = {}): string {
  const value = {
    id: 'cmpl-2f38',
    object: 'text_completion',
    created: 1796319531,
    model: 'm',
    choices: [{ index: 0, text, logprobs: null, finish_reason: extra.finish ?? null, stop_reason: null }],
    usage: null,
    ...(extra.sentNs !== undefined && { servelab_sim: { sent_ns: String(extra.sentNs) } }),
  };
  // json.dumps-style separators, as Python servers built on the standard library write them.
  return extra.spaced ? JSON.stringify(value).replaceAll('":', '": ').replaceAll('","', '", "') : JSON.stringify(value);
}

function chatChunk(delta: Record<string, unknown>, finish: string | null = null): string {
  return JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  });
}

const USAGE = JSON.stringify({
  id: 'cmpl-2f38',
  object: 'text_completion',
  created: 1,
  model: 'm',
  choices: [],
  usage: { prompt_tokens: 7, completion_tokens: 9 },
});

describe('stream event templates', () => {
  test('random completion streams (simulator stamps, json.dumps spacing, hostile texts) read as a full parse reads them', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const random = mulberry32(seed);
      const spaced = seed % 3 === 0;
      const stamped = seed % 2 === 0;
      const events = Array.from({ length: 20 }, (_, i) =>
        completionChunk(randomText(random), { spaced, ...(stamped && { sentNs: 40756348242302 + i * 997 }) }),
      );
      events.push(completionChunk(' end', { finish: 'length', spaced }), USAGE, '[DONE]');
      const fast = read('openai-completions', events, true);
      assert.deepEqual(fast.outcomes, read('openai-completions', events, false).outcomes, `seed ${seed}`);
      assert.deepEqual(fast.facts, read('openai-completions', events, false).facts, `seed ${seed}`);
      assert.ok(fast.matched > 0, `seed ${seed}: the template was used`);
    }
  });

  test('chat streams: role chunk, content, reasoning_content, empty deltas, finish', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const random = mulberry32(seed);
      const events = [chatChunk({ role: 'assistant', content: '' })];
      for (let i = 0; i < 20; i++) {
        const roll = random();
        events.push(chatChunk(roll < 0.15 ? { reasoning_content: randomText(random) } : roll < 0.2 ? {} : { content: randomText(random) }));
      }
      events.push(chatChunk({}, 'stop'), '[DONE]');
      const fast = read('openai-chat', events, true);
      const full = read('openai-chat', events, false);
      assert.deepEqual([fast.outcomes, fast.facts], [full.outcomes, full.facts], `seed ${seed}`);
    }
  });

  test('an error event, a raw control character or a truncated event after the template fail as a full parse fails', () => {
    const good = completionChunk(' a');
    const cases = [
      JSON.stringify({ error: { message: 'CUDA out of memory', code: 500 } }),
      good.replace('" a"', '"x\u0001"'),
      good.replace('" a"', '"bad \\q escape"'),
      good.slice(0, -3),
      `${good} `,
    ];
    for (const bad of cases) {
      const events = [good, completionChunk(' b'), bad];
      assert.deepEqual(read('openai-completions', events, true).outcomes, read('openai-completions', events, false).outcomes, bad);
    }
  });

  test('no template where a slot cannot be proven: a duplicate key, a key name inside a value', () => {
    const duplicate = '{"choices":[{"index":0,"text":" a","text":" b"}]}';
    assert.equal(buildTemplate(duplicate, JSON.parse(duplicate), [['choices', 0, 'text']]), undefined);
    const inValue = '{"model":"\\"text\\":\\"","choices":[{"index":0,"text":" a"}]}';
    const template = buildTemplate(inValue, JSON.parse(inValue), [['choices', 0, 'text']]);
    assert.ok(template, 'the key inside the model name is skipped, the real one found');
    assert.equal(matchTemplate(template, inValue.replace('" a"', '" zz"')), true);
    assert.equal((template.record.choices as Array<{ text: string }>)[0]!.text, ' zz');
    const asValue = '{"type":"text","choices":[{"index":0,"text":" a"}]}';
    assert.ok(buildTemplate(asValue, JSON.parse(asValue), [['choices', 0, 'text']]), '"text" as a value is not taken for the key');
  });

  test('a stream whose shape keeps changing (varying numbers) is read in full, without a template build per event', () => {
    const state = newStreamState(false);
    for (let i = 0; i < 10; i++) {
      BACKENDS['openai-completions'].parse(JSON.stringify({ choices: [{ index: 0, text: ' t' }], usage: { completion_tokens: i + 1 } }), state);
    }
    assert.deepEqual([state.tokenEvents, state.completionTokens, state.templateBuilds], [10, 10, 1]);
  });
});
