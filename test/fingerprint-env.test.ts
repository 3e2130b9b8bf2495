import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { captureEnv, globToRegExp } from '../src/fingerprint/env.js';
import { Redactor, redactor } from '../src/util/redact.js';

const redactValue = (value: string): string => redactor().value(value);

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
    const secrets = new Redactor('salt', ['*PASS']);
    assert.deepEqual(captureEnv({ MY_FLAG: '1', MY_PASS: 'x', OTHER: '2' }, ['MY_*'], secrets), { MY_FLAG: '1', MY_PASS: secrets.value('x') });
  });
});
