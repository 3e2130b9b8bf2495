import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { captureEnv, globToRegExp, redactArgs, redactValue } from '../src/fingerprint/env.js';

describe('globToRegExp', () => {
  test('* and ? wildcards, other characters literal', () => {
    assert.ok(globToRegExp('NCCL_*').test('NCCL_PROTO'));
    assert.ok(!globToRegExp('NCCL_*').test('XNCCL_PROTO'));
    assert.ok(globToRegExp('OMP_NUM_THREAD?').test('OMP_NUM_THREADS'));
    assert.ok(!globToRegExp('A.B').test('AxB'));
  });
});

describe('captureEnv', () => {
  test('keeps only matching names, redacts secret names, values of others unchanged', () => {
    const env = {
      PATH: '/usr/bin',
      HOME: '/root',
      NCCL_PROTO: 'LL',
      CUDA_VISIBLE_DEVICES: '0,1',
      HF_TOKEN: 'hf_abcdef',
      VLLM_API_KEY: 'sk-123',
      TOKENIZERS_PARALLELISM: 'false',
      VLLM_MAX_NUM_BATCHED_TOKENS: '8192',
    };
    assert.deepEqual(captureEnv(env), {
      NCCL_PROTO: 'LL',
      CUDA_VISIBLE_DEVICES: '0,1',
      HF_TOKEN: redactValue('hf_abcdef'),
      VLLM_API_KEY: redactValue('sk-123'),
      TOKENIZERS_PARALLELISM: 'false',
      VLLM_MAX_NUM_BATCHED_TOKENS: '8192',
    });
  });

  test('custom patterns', () => {
    assert.deepEqual(captureEnv({ MY_FLAG: '1', MY_PASS: 'x', OTHER: '2' }, ['MY_*'], ['*PASS']), { MY_FLAG: '1', MY_PASS: redactValue('x') });
  });

  test('redacted values hide the secret but still differ when the secret changes', () => {
    assert.match(redactValue('hf_abcdef'), /^<redacted:[0-9a-f]{8}>$/);
    assert.ok(!redactValue('hf_abcdef').includes('abcdef'));
    assert.notEqual(redactValue('a'), redactValue('b'));
  });
});

describe('redactArgs', () => {
  test('separate and = forms; non-secret flags untouched', () => {
    const argv = ['vllm', 'serve', 'm', '--api-key', 'sk-1', '--hf-token=hf_2', '--max-num-batched-tokens', '8192', '--port', '{port}'];
    assert.deepEqual(redactArgs(argv), ['vllm', 'serve', 'm', '--api-key', redactValue('sk-1'), `--hf-token=${redactValue('hf_2')}`, '--max-num-batched-tokens', '8192', '--port', '{port}']);
  });

  test('a secret-named boolean flag does not swallow the next flag', () => {
    assert.deepEqual(redactArgs(['server', '--use-auth-token', '--model', 'x']), ['server', '--use-auth-token', '--model', 'x']);
  });
});
