import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createParser } from 'eventsource-parser';
import { request } from 'undici';
import { type SimulatorProcess, spawnSimulator } from '../src/simulate/child.js';
import { countTokens } from '../src/simulate/text.js';

/** Protocol wire formats, checked against one real `servelab simulate` process with speculative decoding on. */

const DRAFT_TOKENS = 3;

interface Streamed {
  status: number;
  contentType: string;
  /** Raw `data:` payloads in order, "[DONE]" included. */
  data: string[];
}

async function post(url: string, body: unknown): Promise<{ status: number; contentType: string; text: string }> {
  const response = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  return { status: response.statusCode, contentType: String(response.headers['content-type']), text: await response.body.text() };
}

async function stream(url: string, body: unknown): Promise<Streamed> {
  const response = await post(url, body);
  const data: string[] = [];
  const parser = createParser({ onEvent: (event) => data.push(event.data) });
  parser.feed(response.text);
  return { status: response.status, contentType: response.contentType, data };
}

function jsonEvents(streamed: Streamed): Array<Record<string, any>> {
  return streamed.data.filter((data) => data !== '[DONE]').map((data) => JSON.parse(data) as Record<string, any>);
}

function assertStamped(events: Array<Record<string, any>>): void {
  let previous = 0n;
  for (const event of events) {
    const sent = BigInt(event.servelab_sim.sent_ns as string);
    assert.ok(sent >= previous, 'sent_ns must not go backwards');
    previous = sent;
  }
}

async function metrics(sim: SimulatorProcess): Promise<Map<string, number>> {
  const response = await request(`${sim.url}/metrics`);
  const values = new Map<string, number>();
  for (const line of (await response.body.text()).split('\n')) {
    const match = /^(vllm:[a-z_]+)\{model_name="sim-llama-8b"\} (\S+)$/.exec(line);
    if (match) values.set(match[1]!, Number(match[2]));
  }
  return values;
}

describe('simulator protocols', () => {
  let sim: SimulatorProcess;
  before(async () => {
    sim = await spawnSimulator([
      '--load-ms',
      '0',
      '--ttft-ms',
      '2',
      '--tpot-ms',
      '1',
      '--jitter',
      '0',
      '--spec-draft-tokens',
      String(DRAFT_TOKENS),
      '--spec-acceptance',
      '0.6',
    ]);
    await sim.waitForLine(/Uvicorn running on/, 10_000);
  });
  after(() => sim.stop());

  test('OpenAI completions stream: exact chunk format, usage chunk, [DONE], max_tokens honoured', async () => {
    const streamed = await stream(`${sim.url}/v1/completions`, {
      model: 'sim-llama-8b',
      prompt: 'count these five words',
      max_tokens: 20,
      stream: true,
      ignore_eos: true,
      stream_options: { include_usage: true },
    });
    assert.equal(streamed.status, 200);
    assert.match(streamed.contentType, /^text\/event-stream/);
    assert.equal(streamed.data.at(-1), '[DONE]');
    const events = jsonEvents(streamed);
    assertStamped(events);
    const usage = events.at(-1)!;
    assert.deepEqual(usage.choices, []);
    assert.deepEqual(usage.usage, { prompt_tokens: 4, completion_tokens: 20, total_tokens: 24 });
    const content = events.slice(0, -1);
    for (const event of content) {
      assert.equal(event.object, 'text_completion');
      assert.equal(event.model, 'sim-llama-8b');
      assert.match(event.id, /^cmpl-/);
      assert.equal(event.usage, null);
      assert.equal(event.choices.length, 1);
      assert.equal(event.choices[0].index, 0);
    }
    assert.ok(content.slice(0, -1).every((event) => event.choices[0].finish_reason === null));
    assert.equal(content.at(-1)!.choices[0].finish_reason, 'length');
    const text = content.map((event) => event.choices[0].text as string).join('');
    assert.equal(countTokens(text), 20);
    // With spec decoding on, a verification step may carry several tokens in one chunk.
    assert.ok(content.length <= 20);
  });

  test('OpenAI chat stream: role chunk first, no usage field unless asked', async () => {
    const streamed = await stream(`${sim.url}/v1/chat/completions`, {
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: [{ type: 'text', text: 'hi there' }] },
      ],
      max_tokens: 6,
      stream: true,
      ignore_eos: true,
    });
    assert.equal(streamed.data.at(-1), '[DONE]');
    const events = jsonEvents(streamed);
    assert.deepEqual(events[0]!.choices[0].delta, { role: 'assistant', content: '' });
    for (const event of events) {
      assert.equal(event.object, 'chat.completion.chunk');
      assert.equal('usage' in event, false);
    }
    const text = events.map((event) => (event.choices[0].delta.content as string | undefined) ?? '').join('');
    assert.equal(countTokens(text), 6);
    assert.equal(events.at(-1)!.choices[0].finish_reason, 'length');
  });

  test('non-streaming completions and chat return text and usage', async () => {
    const completion = JSON.parse((await post(`${sim.url}/v1/completions`, { prompt: 'a b c', max_tokens: 7, ignore_eos: true })).text);
    assert.equal(completion.object, 'text_completion');
    assert.equal(countTokens(completion.choices[0].text), 7);
    assert.deepEqual(completion.usage, { prompt_tokens: 3, completion_tokens: 7, total_tokens: 10 });
    const chat = JSON.parse((await post(`${sim.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'x y' }], max_tokens: 4 })).text);
    assert.equal(chat.object, 'chat.completion');
    assert.equal(chat.choices[0].message.role, 'assistant');
    assert.equal(countTokens(chat.choices[0].message.content), 4);
    assert.equal(chat.usage.completion_tokens, 4);
  });

  test('bad requests get OpenAI-style 400s, unknown models 404', async () => {
    const cases: Array<[string, unknown, number]> = [
      ['/v1/completions', { max_tokens: 3 }, 400],
      ['/v1/completions', '{not json', 400],
      ['/v1/completions', { prompt: 'a', max_tokens: 0 }, 400],
      ['/v1/completions', { prompt: 'a', max_tokens: 40_000 }, 400],
      ['/v1/chat/completions', { messages: [] }, 400],
      ['/v1/completions', { model: 'gpt-17', prompt: 'a' }, 404],
      ['/v1/nothing-here', { prompt: 'a' }, 404],
    ];
    for (const [path, body, status] of cases) {
      const response = await post(`${sim.url}${path}`, body);
      assert.equal(response.status, status, `${path} ${JSON.stringify(body)}`);
      const error = JSON.parse(response.text).error;
      assert.equal(error.code, status);
      assert.equal(typeof error.message, 'string');
    }
  });

  test('/v1/models lists the served model; /sim/config returns the effective config', async () => {
    const models = JSON.parse(await (await request(`${sim.url}/v1/models`)).body.text());
    assert.equal(models.object, 'list');
    assert.equal(models.data[0].id, 'sim-llama-8b');
    const config = JSON.parse(await (await request(`${sim.url}/sim/config`)).body.text());
    assert.equal(config.decode.spec.draftTokens, DRAFT_TOKENS);
    assert.equal(config.decode.tpotMs, 1);
  });

  test('/metrics spec-decoding counters move with generation', async () => {
    const before = await metrics(sim);
    await post(`${sim.url}/v1/completions`, { prompt: 'a', max_tokens: 40, ignore_eos: true });
    const after = await metrics(sim);
    const delta = (name: string) => after.get(name)! - before.get(name)!;
    const drafts = delta('vllm:spec_decode_num_drafts_total');
    assert.ok(drafts > 0);
    assert.ok(drafts <= 39, 'at most one verification step per token after the first');
    assert.equal(delta('vllm:spec_decode_num_draft_tokens_total'), drafts * DRAFT_TOKENS);
    const accepted = delta('vllm:spec_decode_num_accepted_tokens_total');
    assert.ok(accepted >= 0 && accepted <= drafts * DRAFT_TOKENS);
    // 40 tokens = 1 prefill token + one per step + accepted drafts (the last step may be cut short by max_tokens).
    assert.ok(1 + drafts + accepted >= 40);
    assert.equal(delta('vllm:generation_tokens_total'), 40);
    assert.equal(after.get('vllm:num_requests_running'), 0);
  });

  test('SGLang /generate streams cumulative text with meta_info, then [DONE]', async () => {
    const streamed = await stream(`${sim.url}/generate`, { text: 'one two three', sampling_params: { max_new_tokens: 12, ignore_eos: true }, stream: true });
    assert.equal(streamed.data.at(-1), '[DONE]');
    const events = jsonEvents(streamed);
    assertStamped(events);
    let previous = '';
    for (const event of events) {
      assert.ok((event.text as string).startsWith(previous), 'text is cumulative');
      previous = event.text;
      assert.equal(event.meta_info.prompt_tokens, 3);
    }
    const last = events.at(-1)!.meta_info;
    assert.equal(countTokens(previous), 12);
    assert.equal(last.completion_tokens, 12);
    assert.deepEqual(last.finish_reason, { type: 'length', length: 12 });
    // The speculative fields come with the final chunk only, with SGLang's definitions (tokenizer_manager.py
    // `_calculate_spec_decoding_metrics`): accept_length = completion_tokens / verify steps, rate = correct / proposed.
    for (const event of events.slice(0, -1)) assert.equal(event.meta_info.spec_verify_ct, undefined, 'no spec fields before the final chunk');
    assert.ok(last.spec_verify_ct > 0);
    assert.ok(Math.abs(last.spec_accept_length - 12 / last.spec_verify_ct) < 1e-9);
    // Every output token but the prefill's is an accepted draft or a step's bonus; the last step may accept past max_new_tokens.
    assert.ok(last.spec_num_correct_drafts >= 12 - 1 - last.spec_verify_ct);
    assert.equal(last.spec_num_proposed_drafts, last.spec_verify_ct * DRAFT_TOKENS);
    assert.ok(Math.abs(last.spec_accept_rate - last.spec_num_correct_drafts / last.spec_num_proposed_drafts) < 1e-9);
    const plain = JSON.parse((await post(`${sim.url}/generate`, { text: 'x', sampling_params: { max_new_tokens: 3 } })).text);
    assert.equal(countTokens(plain.text), 3);
    assert.equal(plain.meta_info.completion_tokens, 3);
  });

  test('TGI /generate_stream sends one event per token, the last with generated_text and details', async () => {
    const streamed = await stream(`${sim.url}/generate_stream`, { inputs: 'tell me', parameters: { max_new_tokens: 9 } });
    assert.ok(!streamed.data.includes('[DONE]'));
    const events = jsonEvents(streamed);
    assertStamped(events);
    assert.equal(events.length, 9);
    events.forEach((event, index) => {
      assert.equal(event.index, index + 1);
      assert.equal(typeof event.token.id, 'number');
      assert.equal(event.token.special, false);
      assert.equal(typeof event.token.logprob, 'number');
      if (index < 8) assert.equal(event.generated_text, null);
    });
    const last = events.at(-1)!;
    assert.equal(last.generated_text, events.map((event) => event.token.text).join(''));
    assert.equal(last.details.finish_reason, 'length');
    assert.equal(last.details.generated_tokens, 9);
    const plain = JSON.parse((await post(`${sim.url}/generate`, { inputs: 'x y', parameters: { max_new_tokens: 5 } })).text);
    assert.equal(countTokens(plain.generated_text), 5);
  });

  test('llama.cpp /completion streams content and ends with stop and timings incl. draft counts', async () => {
    const streamed = await stream(`${sim.url}/completion`, { prompt: 'a b c d', n_predict: 15, stream: true, ignore_eos: true });
    assert.ok(!streamed.data.includes('[DONE]'));
    const events = jsonEvents(streamed);
    assertStamped(events);
    const final = events.at(-1)!;
    assert.equal(final.stop, true);
    assert.ok(events.slice(0, -1).every((event) => event.stop === false));
    assert.equal(countTokens(events.map((event) => event.content as string).join('')), 15);
    assert.equal(final.timings.prompt_n, 4);
    assert.equal(final.timings.predicted_n, 15);
    assert.ok(final.timings.predicted_ms >= 0);
    assert.equal(final.timings.draft_n % DRAFT_TOKENS, 0);
    assert.ok(final.timings.draft_n_accepted <= final.timings.draft_n);
    assert.equal(final.stopped_limit, true);
  });
});
