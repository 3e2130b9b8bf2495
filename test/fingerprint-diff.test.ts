import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { canonicalJson, diffFingerprints, fingerprintHash, flattenFingerprint, formatChanges, isVolatileKey } from '../src/fingerprint/diff.js';
import type { Fingerprint } from '../src/fingerprint/types.js';

function sample(): Fingerprint {
  return {
    servelabVersion: '0.1.0',
    servelabGitSha: 'abc',
    executor: 'local',
    host: { hostname: 'box', os: 'Linux', kernel: '6.8.0', cpuModel: 'EPYC', cpus: 64, memoryGiB: 503.5 },
    gpus: [{ index: 0, name: 'NVIDIA H200', driver: '550.54.15', memoryMiB: 143771, smClockMHz: 1980, maxSmClockMHz: 1980, powerLimitW: 700 }],
    command: ['vllm', 'serve', 'my model', '--port', '{port}'],
    env: { NCCL_PROTO: 'LL', NCCL_ALGO: 'Ring' },
    packages: { vllm: '0.6.3' },
    model: 'my model',
  };
}

describe('flattenFingerprint', () => {
  test('dotted keys for every fact', () => {
    const flat = flattenFingerprint(sample());
    assert.equal(flat['gpus.0.driver'], '550.54.15');
    assert.equal(flat['gpus.0.smClockMHz'], '1980');
    assert.equal(flat['host.memoryGiB'], '503.5');
    assert.equal(flat['env.NCCL_PROTO'], 'LL');
    assert.equal(flat['packages.vllm'], '0.6.3');
    assert.equal(flat.command, 'vllm serve "my model" --port {port}');
    assert.equal(flat.model, 'my model');
    assert.equal(flat['gpus.0.index'], undefined);
  });
});

describe('diffFingerprints / formatChanges', () => {
  test('unset env vars, changed driver and package', () => {
    const after = sample();
    after.env = {};
    after.gpus[0]!.driver = '560.35.03';
    after.packages = { vllm: '0.6.4', torch: '2.5.0' };
    const changes = diffFingerprints(sample(), after);
    assert.deepEqual(changes, [
      { key: 'gpus.0.driver', before: '550.54.15', after: '560.35.03' },
      { key: 'env.NCCL_PROTO', before: 'LL' },
      { key: 'env.NCCL_ALGO', before: 'Ring' },
      { key: 'packages.vllm', before: '0.6.3', after: '0.6.4' },
      { key: 'packages.torch', after: '2.5.0' },
    ]);
    assert.equal(
      formatChanges(changes),
      'gpus.0.driver 550.54.15 → 560.35.03, NCCL_PROTO LL → (unset), NCCL_ALGO Ring → (unset), packages.vllm 0.6.3 → 0.6.4, packages.torch (unset) → 2.5.0',
    );
  });

  test('current SM clock is volatile: ignored by default, reported on request', () => {
    const after = sample();
    after.gpus[0]!.smClockMHz = 345;
    assert.deepEqual(diffFingerprints(sample(), after), []);
    assert.deepEqual(diffFingerprints(sample(), after, { includeVolatile: true }), [{ key: 'gpus.0.smClockMHz', before: '1980', after: '345' }]);
  });

  test('preflight readings of the moment are volatile; preflight settings are configuration', () => {
    const before = sample();
    before.preflight = {
      'host.load': 'host busy: load average 5.30 on 16 CPUs',
      'gpu0.foreignMemory': 'GPU 0: 31.0 GiB of memory in use before the server starts',
    };
    const after = sample();
    after.preflight = {
      'host.load': 'host busy: load average 3.40 on 16 CPUs',
      'gpu0.clockEvents': 'GPU 0: clock-event reasons active: SW power cap',
      'gpu0.foreignProcesses': 'GPU 0: 1 process already on it (python3 pid 5440 31.0 GiB)',
      'gpu0.powerLimit': 'GPU 0: power limit 500 W below default 700 W',
    };
    for (const key of [
      'gpus.0.smClockMHz',
      'preflight.host.load',
      'preflight.gpu0.foreignMemory',
      'preflight.gpu0.foreignProcesses',
      'preflight.gpu0.clockEvents',
    ])
      assert.equal(isVolatileKey(key), true, key);
    for (const key of ['preflight.gpu0.powerLimit', 'preflight.gpu0.applicationClocks', 'preflight.host.governor', 'gpus.0.maxSmClockMHz', 'env.NCCL_PROTO'])
      assert.equal(isVolatileKey(key), false, key);
    assert.deepEqual(
      diffFingerprints(before, after).map((change) => change.key),
      ['preflight.gpu0.powerLimit'],
    );
    assert.equal(diffFingerprints(before, after, { includeVolatile: true }).length, 5);
  });

  test('a GPU gone', () => {
    const after = sample();
    after.gpus = [];
    assert.equal(diffFingerprints(sample(), after).length, 5);
  });
});

describe('fingerprintHash', () => {
  test('stable: key order does not matter; sha256 hex', () => {
    const a = sample();
    const b: Fingerprint = {
      model: a.model,
      packages: a.packages,
      env: { NCCL_ALGO: 'Ring', NCCL_PROTO: 'LL' },
      command: a.command,
      gpus: a.gpus,
      host: a.host,
      executor: a.executor,
      servelabGitSha: a.servelabGitSha,
      servelabVersion: a.servelabVersion,
    };
    assert.match(fingerprintHash(a), /^[0-9a-f]{64}$/);
    assert.equal(fingerprintHash(a), fingerprintHash(b));
  });

  test('equal hash exactly when there is no (non-volatile) change', () => {
    const clock = sample();
    clock.gpus[0]!.smClockMHz = 210;
    assert.equal(fingerprintHash(clock), fingerprintHash(sample()));
    const env = sample();
    env.env.NCCL_PROTO = 'Simple';
    assert.notEqual(fingerprintHash(env), fingerprintHash(sample()));
    const command = sample();
    command.command = ['vllm', 'serve', 'my', 'model', '--port', '{port}'];
    assert.notEqual(fingerprintHash(command), fingerprintHash(sample()));
  });

  test('canonicalJson sorts keys at every level and keeps array order', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [2, 1], c: undefined } }), '{"a":{"d":[2,1]},"b":1}');
  });
});
