import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BACKENDS, newStreamState, StreamFormatError } from '../src/load/backends.js';
import { specFromResponses } from '../src/load/spec.js';

const item = { prompt: 'hello world', inputTokens: 2, maxTokens: 5 };

/** Feed payloads, return which were token-bearing. */
function feed(kind: keyof typeof BACKENDS, payloads: unknown[], collectText = true) {
  const state = newStreamState(collectText);
  const bearing = payloads.map((payload) => BACKENDS[kind].parse(typeof payload === 'string' ? payload : JSON.stringify(payload), state));
  return { state, bearing };
}

describe('request bodies', () => {
  test('each backend asks for a stream of exactly maxTokens, honouring ignore_eos', () => {
    const options = { model: 'm', ignoreEos: true };
    const completions = JSON.parse(BACKENDS['openai-completions'].body(item, options));
    assert.deepEqual(
      [completions.model, completions.prompt, completions.max_tokens, completions.stream, completions.ignore_eos],
      ['m', 'hello world', 5, true, true],
    );
    assert.deepEqual(completions.stream_options, { include_usage: true });
    assert.deepEqual(JSON.parse(BACKENDS['openai-chat'].body(item, options)).messages, [{ role: 'user', content: 'hello world' }]);
    assert.deepEqual(JSON.parse(BACKENDS.sglang.body(item, options)).sampling_params, { max_new_tokens: 5, temperature: 0, ignore_eos: true });
    assert.equal(JSON.parse(BACKENDS.tgi.body(item, options)).parameters.max_new_tokens, 5);
    const llama = JSON.parse(BACKENDS.llamacpp.body(item, { ignoreEos: false }));
    assert.deepEqual([llama.n_predict, llama.stream, llama.ignore_eos], [5, true, undefined]);
  });
});

describe('stream parsers', () => {
  test('OpenAI completions: text chunks bear tokens, usage chunk and [DONE] do not', () => {
    const { state, bearing } = feed('openai-completions', [
      { choices: [{ text: ' a', index: 0 }], usage: null },
      { choices: [{ text: ' b c', index: 0 }], usage: null, servelab_sim: { sent_ns: '123' } },
      { choices: [], usage: { prompt_tokens: 2, completion_tokens: 3 } },
      '[DONE]',
    ]);
    assert.deepEqual(bearing, [true, true, false, false]);
    assert.deepEqual(
      [state.tokenEvents, state.promptTokens, state.completionTokens, state.done, state.text, state.simSentNs],
      [2, 2, 3, true, ' a b c', '123'],
    );
  });

  test("llama.cpp's OpenAI-compatible stream: the final chunk's timings carry the draft counts", () => {
    const { state, bearing } = feed('openai-chat', [
      { choices: [{ delta: { content: 'hi' } }] },
      { choices: [{ delta: {}, finish_reason: 'length' }], timings: { predicted_n: 5, draft_n: 12, draft_n_accepted: 9 } },
      '[DONE]',
    ]);
    assert.deepEqual(bearing, [true, false, false]);
    assert.deepEqual([state.specDraftTokens, state.specAcceptedTokens], [12, 9]);
  });

  test('OpenAI chat: role-only first chunk is not a token', () => {
    const { state, bearing } = feed('openai-chat', [
      { choices: [{ delta: { role: 'assistant', content: '' } }] },
      { choices: [{ delta: { content: 'hi' } }] },
      { choices: [{ delta: { reasoning_content: 'hmm' } }] },
      '[DONE]',
    ]);
    assert.deepEqual(bearing, [false, true, true, false]);
    assert.equal(state.completionTokens, undefined);
  });

  test('SGLang: cumulative text, meta_info counts and verify steps', () => {
    const { state, bearing } = feed('sglang', [
      { text: ' a', meta_info: { prompt_tokens: 2, completion_tokens: 1 } },
      { text: ' a', meta_info: { prompt_tokens: 2, completion_tokens: 1 } },
      { text: ' a b c', meta_info: { prompt_tokens: 2, completion_tokens: 3, spec_verify_ct: 1 } },
      '[DONE]',
    ]);
    assert.deepEqual(bearing, [true, false, true, false]);
    assert.deepEqual([state.text, state.completionTokens, state.specVerifySteps, state.done], [' a b c', 3, 1, true]);
  });

  test("SGLang: every generation of the draft-count keys is read, the newest a server sends first (verl#7543's table)", () => {
    const final = (meta: object) => feed('sglang', [{ text: ' a b c', meta_info: { completion_tokens: 3, spec_verify_ct: 2, ...meta } }]).state;
    const counts = (meta: object) => {
      const state = final(meta);
      return [state.specAcceptedTokens, state.specDraftTokens, state.specVerifySteps];
    };
    assert.deepEqual(counts({ spec_accept_token_num: 1, spec_draft_token_num: 6 }), [1, 6, 2], '<= 0.5.10.post1');
    assert.deepEqual(counts({ spec_accepted_drafts: 1, spec_proposed_drafts: 6 }), [1, 6, 2], '0.5.11');
    assert.deepEqual(counts({ spec_num_correct_drafts: 1, spec_num_proposed_drafts: 6 }), [1, 6, 2], '>= 0.5.12');
    // 0.5.12 keeps the 0.5.11 names as aliases (sglang#24081): the newest pair wins.
    assert.deepEqual(counts({ spec_num_correct_drafts: 1, spec_num_proposed_drafts: 6, spec_accepted_drafts: 9, spec_proposed_drafts: 9 }), [1, 6, 2]);
    const stats = specFromResponses([final({ spec_accept_token_num: 1, spec_draft_token_num: 6 })])!;
    assert.deepEqual([stats.acceptanceRate, stats.meanAcceptedLength], [1 / 6, 1.5]);
    assert.match(stats.source, /^sglang meta_info/);
  });

  test('vLLM: metrics.speculative_decoding on the final usage chunk (--per-request-spec-decode-metrics, vllm#48915)', () => {
    const { state, bearing } = feed('openai-chat', [
      { choices: [{ delta: { content: 'hi' } }] },
      {
        // The summary as vllm#48915 shows it, on the usage chunk (choices: []) as llama-swap#1032 captured it.
        choices: [],
        usage: { prompt_tokens: 11742, total_tokens: 11777, completion_tokens: 35 },
        metrics: {
          speculative_decoding: {
            mean_acceptance_length: 1.2325581395348837,
            draft_acceptance_rate: 0.07751937984496124,
            acceptance_histogram: [39, 1, 0, 3],
            num_spec_steps: 43,
            num_accepted_draft_tokens: 10,
            num_draft_tokens: 129,
            num_spec_tokens: 3,
          },
        },
      },
      '[DONE]',
    ]);
    assert.deepEqual(bearing, [true, false, false]);
    assert.deepEqual([state.specVerifySteps, state.specAcceptedTokens, state.specDraftTokens], [43, 10, 129]);
    const stats = specFromResponses([state])!;
    assert.match(stats.source, /^vllm per-request metrics\.speculative_decoding/);
    assert.ok(Math.abs(stats.acceptanceRate! - 0.07751937984496124) < 1e-12);
    assert.ok(Math.abs(stats.meanAcceptedLength! - 1.2325581395348837) < 1e-12);
  });

  test('TGI: token events, final details, special tokens skipped', () => {
    const { state, bearing } = feed('tgi', [
      { index: 1, token: { id: 1, text: ' a', special: false }, generated_text: null, details: null },
      { index: 2, token: { id: 2, text: '</s>', special: true }, generated_text: ' a', details: { generated_tokens: 2 } },
    ]);
    assert.deepEqual(bearing, [true, false]);
    assert.deepEqual([state.completionTokens, state.done], [2, true]);
  });

  test('llama.cpp: content events, final stop event with timings and draft counters', () => {
    const { state, bearing } = feed('llamacpp', [
      { content: ' a', stop: false },
      { content: '', stop: true, tokens_predicted: 9, tokens_evaluated: 4, timings: { predicted_n: 9, prompt_n: 4, draft_n: 10, draft_n_accepted: 7 } },
    ]);
    assert.deepEqual(bearing, [true, false]);
    assert.deepEqual([state.completionTokens, state.promptTokens, state.specDraftTokens, state.specAcceptedTokens, state.done], [9, 4, 10, 7, true]);
  });

  test('garbage and error events are format errors', () => {
    assert.throws(() => feed('openai-completions', ['{not json']), StreamFormatError);
    assert.throws(() => feed('openai-completions', ['42']), StreamFormatError);
    assert.throws(() => feed('openai-chat', [{ error: { message: 'boom' } }]), /server sent an error event/);
  });

  test('text is only accumulated when a tokenizer needs it', () => {
    const { state } = feed('openai-completions', [{ choices: [{ text: ' a' }] }], false);
    assert.equal(state.text, '');
    assert.equal(state.tokenEvents, 1);
  });
});

describe('clock', () => {
  test('nowMs reads process.hrtime time (the simulator stamps sent_ns with it) without its BigInt cost', async () => {
    const { nowMs } = await import('../src/load/request.js');
    for (let i = 0; i < 20; i++) {
      const before = Number(process.hrtime.bigint()) / 1e6;
      const now = nowMs();
      const after = Number(process.hrtime.bigint()) / 1e6;
      assert.ok(now >= before - 0.05 && now <= after + 0.05, `nowMs ${now} outside [${before}, ${after}]`);
    }
  });
});
