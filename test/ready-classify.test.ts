import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { classifyGeneration, classifyHealth, classifyModels } from '../src/ready/classify.js';

const answer = (status: number, body: string, contentType?: string) => ({ status, body, ...(contentType && { contentType }) });

describe('classifyHealth', () => {
  test('200 with an empty body (vLLM, TGI) is ready', () => {
    assert.equal(classifyHealth(answer(200, '')).state, 'ready');
  });

  test('JSON status field decides, as a whole word', () => {
    assert.equal(classifyHealth(answer(200, '{"status":"ok"}')).state, 'ready');
    assert.equal(classifyHealth(answer(200, '{"status":"healthy"}')).state, 'ready');
    assert.equal(classifyHealth(answer(200, '{"status":"loading"}')).state, 'not-ready');
    assert.equal(classifyHealth(answer(200, '{"status":"not ok"}')).state, 'not-ready');
    assert.equal(classifyHealth(answer(200, '{"status":"okay-ish"}')).state, 'not-ready');
    assert.equal(classifyHealth(answer(200, '{"status":false}')).state, 'not-ready');
    assert.equal(classifyHealth(answer(200, '{"uptime":3}')).state, 'ready');
  });

  test('the HTTP status comes first: 503 with {"status":"ok"} is not ready', () => {
    const verdict = classifyHealth(answer(503, '{"status":"ok"}'));
    assert.equal(verdict.state, 'not-ready');
  });

  test("llama.cpp's 503 loading answer is not ready and names the message", () => {
    const verdict = classifyHealth(answer(503, '{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}'));
    assert.deepEqual(verdict, { state: 'not-ready', detail: '503: Loading model' });
  });

  test('an HTML page is the wrong server, named by its title', () => {
    const verdict = classifyHealth(answer(200, '<html><head><title>Jupyter Server</title></head></html>', 'text/html'), undefined, '/health');
    assert.equal(verdict.state, 'wrong');
    assert.match(verdict.detail, /HTML page titled "Jupyter Server"/);
  });

  test('plain text must be a bare healthy word or match the profile pattern', () => {
    assert.equal(classifyHealth(answer(200, 'OK\n')).state, 'ready');
    assert.equal(classifyHealth(answer(200, 'not ok')).state, 'wrong');
    const ollama = BUILTIN_PROFILES.ollama!;
    assert.equal(classifyHealth(answer(200, 'Ollama is running'), ollama.healthTextPattern).state, 'ready');
    assert.equal(classifyHealth(answer(200, 'Ollama is running'), undefined).state, 'wrong');
  });

  test('404 and 401 are wrong (waiting cannot fix them); 5xx, 408 and 429 are not ready', () => {
    assert.equal(classifyHealth(answer(404, 'Not Found')).state, 'wrong');
    assert.match(classifyHealth(answer(401, '{"error":"unauthorized"}')).detail, /API key/);
    for (const status of [500, 502, 503, 504, 408, 429]) assert.equal(classifyHealth(answer(status, '')).state, 'not-ready');
    assert.match(classifyHealth(answer(502, '<html><title>502 Bad Gateway</title></html>')).detail, /502: .*Bad Gateway/);
  });
});

describe('classifyModels', () => {
  test('a model list with a model is ready and names the first model', () => {
    assert.deepEqual(classifyModels(answer(200, '{"object":"list","data":[{"id":"m1"},{"id":"m2"}]}')), { state: 'ready', detail: 'm1' });
  });

  test('an empty list is not ready yet', () => {
    assert.equal(classifyModels(answer(200, '{"object":"list","data":[]}')).state, 'not-ready');
  });

  test('a non-OpenAI answer is wrong and shows what came back', () => {
    const verdict = classifyModels(answer(200, '{"models":[{"name":"llama3"}]}'));
    assert.equal(verdict.state, 'wrong');
    assert.match(verdict.detail, /\{"models".*not an OpenAI model list/);
    assert.equal(classifyModels(answer(404, '')).state, 'wrong');
    assert.equal(classifyModels(answer(503, '{"error":{"message":"loading"}}')).state, 'not-ready');
  });
});

describe('classifyGeneration', () => {
  test('choices mean ready; 503 not ready; 400 or a body without choices wrong', () => {
    assert.equal(classifyGeneration(answer(200, '{"choices":[{"text":" a"}]}'), '/v1/completions').state, 'ready');
    assert.equal(classifyGeneration(answer(200, '{"choices":[{"text":"","finish_reason":"error"}]}'), '/v1/completions').state, 'not-ready');
    assert.equal(classifyGeneration(answer(200, '{"choices":[{"text":""}],"error":{"message":"CUDA error"}}'), '/v1/completions').state, 'not-ready');
    assert.equal(classifyGeneration(answer(503, '{"error":{"message":"still loading"}}'), '/v1/completions').state, 'not-ready');
    assert.equal(classifyGeneration(answer(400, '{"error":{"message":"model x does not exist"}}'), '/v1/completions').state, 'wrong');
    assert.equal(classifyGeneration(answer(200, '{"result":"hi"}'), '/v1/completions').state, 'wrong');
  });

  test('an answer of no token is not ready; an end-of-sequence token (empty text, 1 token) is', () => {
    const zero = classifyGeneration(answer(200, '{"choices":[{"text":"","finish_reason":"length"}],"usage":{"completion_tokens":0}}'), '/v1/completions');
    assert.deepEqual(zero, { state: 'not-ready', detail: 'answered 200 with no token (text "", completion_tokens 0)' });
    assert.equal(classifyGeneration(answer(200, '{"choices":[{"message":{"content":""}}]}'), '/v1/chat/completions').state, 'not-ready');
    assert.equal(
      classifyGeneration(answer(200, '{"choices":[{"text":"","finish_reason":"stop"}],"usage":{"completion_tokens":1}}'), '/v1/completions').state,
      'ready',
    );
  });
});
