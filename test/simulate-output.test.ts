import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request } from 'undici';
import { type SimulatorProcess, spawnSimulator } from '../src/simulate/child.js';

/** Greedy outputs of real `servelab simulate` processes: one answer per prompt, and the --lossy / --divergence-after / --batch-variance knobs. */

const FAST = ['--port', '0', '--jitter', '0', '--ttft-ms', '0', '--tpot-ms', '0', '--load-ms', '0', '--stats-interval-ms', '0'];
const TOKENS = 64;

async function post(url: string, body: unknown): Promise<Record<string, any>> {
  const response = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  assert.equal(response.statusCode, 200);
  return (await response.body.json()) as Record<string, any>;
}

/** Token ids of a greedy /v1/completions answer (vLLM's return_token_ids). */
async function ids(server: SimulatorProcess, prompt: string, extra: object = {}): Promise<number[]> {
  const body = await post(`${server.url}/v1/completions`, { prompt, max_tokens: TOKENS, temperature: 0, ignore_eos: true, return_token_ids: true, ...extra });
  return body.choices[0].token_ids as number[];
}

async function ready(server: SimulatorProcess): Promise<SimulatorProcess> {
  await server.waitForLine(/Application startup complete|Uvicorn running/, 30_000);
  return server;
}

describe('simulator greedy outputs', () => {
  let reference: SimulatorProcess;
  let lossy: SimulatorProcess;
  let diverging: SimulatorProcess;
  let batchVariant: SimulatorProcess;
  before(async () => {
    [reference, lossy, diverging, batchVariant] = await Promise.all([
      spawnSimulator(FAST).then(ready),
      spawnSimulator([...FAST, '--lossy', '0.25']).then(ready),
      spawnSimulator([...FAST, '--divergence-after', '10', '--engine', 'vllm']).then(ready),
      // Steps of 2 ms, so requests sent together share the batch for their whole answer.
      spawnSimulator([...FAST, '--tpot-ms', '2', '--batch-variance', '0.5']).then(ready),
    ]);
  });
  after(async () => {
    await Promise.all([reference, lossy, diverging, batchVariant].map((server) => server?.stop()));
  });

  test('temperature 0 gives one answer per prompt, whatever else runs beside it; other temperatures do not', async () => {
    const [first, second, other] = await Promise.all([ids(reference, 'a b c'), ids(reference, 'a b c'), ids(reference, 'a b d')]);
    assert.equal(first.length, TOKENS);
    assert.deepEqual(second, first);
    assert.notDeepEqual(other, first);
    assert.deepEqual(await ids(reference, 'a b c', { temperature: undefined, top_k: 1 }), first);
    const sampled = await Promise.all([ids(reference, 'a b c', { temperature: 1 }), ids(reference, 'a b c', { temperature: 1 })]);
    assert.notDeepEqual(sampled[0], sampled[1]);
  });

  test('--lossy replaces about that share of tokens, the same ones every time', async () => {
    let changed = 0;
    let total = 0;
    for (let prompt = 0; prompt < 8; prompt++) {
      const [base, perturbed, again] = await Promise.all([ids(reference, `prompt ${prompt}`), ids(lossy, `prompt ${prompt}`), ids(lossy, `prompt ${prompt}`)]);
      assert.deepEqual(again, perturbed);
      changed += base.filter((id, position) => perturbed[position] !== id).length;
      total += base.length;
    }
    // 512 positions at 0.25: the binomial's 4-sigma band is about ±0.08.
    assert.ok(Math.abs(changed / total - 0.25) < 0.08, `changed share ${changed / total}`);
  });

  test('--divergence-after N keeps N tokens and changes the next', async () => {
    const [base, diverged] = await Promise.all([ids(reference, 'x y z'), ids(diverging, 'x y z')]);
    assert.deepEqual(diverged.slice(0, 10), base.slice(0, 10));
    assert.notEqual(diverged[10], base[10]);
  });

  test('--batch-variance P: alone, the reference answer; batched, a share P of prompts departs in the second half, the same way every time', async () => {
    const prompts = Array.from({ length: 24 }, (_, index) => `batch ${index}`);
    const alone: number[][] = [];
    for (const prompt of prompts) alone.push(await ids(batchVariant, prompt));
    const references = await Promise.all(prompts.map((prompt) => ids(reference, prompt)));
    assert.deepEqual(alone, references);
    const batched = await Promise.all(prompts.map((prompt) => ids(batchVariant, prompt)));
    const departures = batched.flatMap((answer, index) => {
      const at = answer.findIndex((id, position) => id !== alone[index]![position]);
      return at === -1 ? [] : [at];
    });
    // 24 prompts at P = 0.5 (drawn per prompt and seed, so this count is fixed for the default seed).
    assert.ok(departures.length >= 6 && departures.length <= 18, `departed: ${departures.length} of 24`);
    for (const at of departures) assert.ok(at >= TOKENS / 2 && at < TOKENS, `departs at ${at}`);
    assert.deepEqual(await Promise.all(prompts.map((prompt) => ids(batchVariant, prompt))), batched);
  });

  test('token ids come as each engine gives them: SGLang output_ids, llama.cpp return_tokens', async () => {
    const expected = await ids(reference, 'ids please');
    const sglang = await post(`${reference.url}/generate`, {
      text: 'ids please',
      sampling_params: { max_new_tokens: TOKENS, temperature: 0, ignore_eos: true },
    });
    assert.deepEqual(sglang.output_ids, expected);
    const llama = await post(`${reference.url}/completion`, { prompt: 'ids please', n_predict: TOKENS, temperature: 0, ignore_eos: true, return_tokens: true });
    assert.deepEqual(llama.tokens, expected);
    // The vLLM personality has no llama.cpp field: its answer carries no ids.
    const vllm = await post(`${diverging.url}/completion`, { prompt: 'ids please', n_predict: 4, temperature: 0, return_tokens: true });
    assert.equal(vllm.tokens, undefined);
  });
});
