import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { configKey } from '../src/launch/config.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { classifyLogLine } from '../src/profiles/classify.js';
import { inferProfileName, loadUserProfiles, resolveProfile } from '../src/profiles/user.js';
import { UserError } from '../src/util/errors.js';

const profile = (name: string) => BUILTIN_PROFILES[name]!;

describe('log line classifier', () => {
  test('vLLM startup lines map to phases', () => {
    const vllm = profile('vllm');
    assert.deepEqual(classifyLogLine(vllm, 'INFO 12-02 14:03:19 [default_loader.py:262] Loading weights took 14.52 seconds'), {
      kind: 'phase',
      name: 'weights loaded',
    });
    assert.deepEqual(classifyLogLine(vllm, 'Capturing CUDA graph shapes: 100%|██████████| 67/67'), { kind: 'phase', name: 'capturing CUDA graphs' });
    assert.deepEqual(classifyLogLine(vllm, 'INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)'), {
      kind: 'phase',
      name: 'Uvicorn running',
    });
    assert.equal(classifyLogLine(vllm, 'INFO 12-02 14:03:19 [metrics.py:1] Avg prompt throughput: 0.0 tokens/s'), undefined);
  });

  test('other servers: SGLang, TGI, llama.cpp', () => {
    assert.equal(classifyLogLine(profile('sglang'), '[2025-01-01 10:00:00] The server is fired up and ready to roll!')?.kind, 'phase');
    assert.deepEqual(classifyLogLine(profile('tgi'), '2024-05-01T10:00:00Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0'), {
      kind: 'phase',
      name: 'starting shards',
    });
    assert.deepEqual(classifyLogLine(profile('llamacpp'), 'main: server is listening on http://127.0.0.1:8080 - starting the main loop'), {
      kind: 'phase',
      name: 'listening',
    });
  });

  test('fatal lines win over phases and carry a hint; the more specific pattern ranks lower', () => {
    const vllm = profile('vllm');
    const oom = classifyLogLine(vllm, 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.');
    const traceback = classifyLogLine(vllm, 'Traceback (most recent call last):');
    assert.equal(oom?.kind, 'fatal');
    assert.equal(traceback?.kind, 'fatal');
    if (oom?.kind !== 'fatal' || traceback?.kind !== 'fatal') return;
    assert.equal(oom.name, 'CUDA out of memory');
    assert.match(oom.hint, /gpu-memory-utilization/);
    assert.ok(oom.rank < traceback.rank);
    for (const line of [
      'OSError: [Errno 98] Address already in use',
      'NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error',
      'RuntimeError: CUDA error: an illegal memory access was encountered',
    ]) {
      assert.equal(classifyLogLine(vllm, line)?.kind, 'fatal', line);
    }
  });

  test('colour codes do not hide a pattern; harmless mentions do not match', () => {
    assert.equal(classifyLogLine(profile('vllm'), '\u001b[31mTraceback (most recent call last):\u001b[0m')?.kind, 'fatal');
    assert.equal(classifyLogLine(profile('vllm'), 'INFO gpu_worker: free memory 70 GiB; nothing killed'), undefined);
  });
});

describe('user profiles', () => {
  test('a YAML profile extends a built-in; its patterns are tried first', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-profiles-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'profiles.yaml');
    writeFileSync(
      path,
      [
        'profiles:',
        '  myvllm:',
        '    extends: vllm',
        '    healthPath: /ready',
        '    phasePatterns:',
        '      - { name: "compiling", pattern: "torch.compile takes" }',
        '    fatalPatterns:',
        '      - { name: "license", pattern: "gated repo", hint: "run huggingface-cli login" }',
        '  mine2:',
        '    extends: myvllm',
        '    defaultPort: 9000',
      ].join('\n'),
    );
    const users = loadUserProfiles(path);
    const mine = resolveProfile('mine2', users);
    assert.equal(mine.name, 'mine2');
    assert.equal(mine.healthPath, '/ready');
    assert.equal(mine.defaultPort, 9000);
    assert.equal(mine.openaiCompatible, true);
    assert.deepEqual(classifyLogLine(mine, 'torch.compile takes 12.3 s in total'), { kind: 'phase', name: 'compiling' });
    assert.equal(classifyLogLine(mine, 'Cannot access gated repo for url')?.kind, 'fatal');
    assert.deepEqual(classifyLogLine(mine, 'Loading weights took 3 s'), { kind: 'phase', name: 'weights loaded' });
  });

  test('a bad regex names the file, line and key; unknown names and cycles are user errors', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-profiles-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'profiles.yaml');
    writeFileSync(path, 'profiles:\n  bad:\n    extends: vllm\n    healthTextPattern: "(unclosed"\n');
    assert.throws(
      () => loadUserProfiles(path),
      (error: UserError) => error instanceof UserError && /profiles\.yaml:4: profiles\.bad\.healthTextPattern: invalid regular expression/.test(error.message),
    );
    assert.throws(
      () => resolveProfile('nope'),
      (error: UserError) => /unknown server profile "nope"/.test(error.message) && /vllm/.test(error.hint),
    );
    assert.throws(() => resolveProfile('a', { a: { extends: 'b' }, b: { extends: 'a' } }), /extends itself/);
  });
});

describe('launch identity', () => {
  test('the profile is guessed from the command', () => {
    assert.equal(inferProfileName(['vllm', 'serve', 'Qwen/Qwen3-8B']), 'vllm');
    assert.equal(inferProfileName(['python', '-m', 'sglang.launch_server']), 'sglang');
    assert.equal(inferProfileName(['/opt/llama.cpp/build/bin/llama-server', '-m', 'x.gguf']), 'llamacpp');
    assert.equal(inferProfileName(['node', 'bin/servelab.js', 'simulate']), 'simulator');
    assert.equal(inferProfileName(['my-server']), 'openai');
  });

  test('the config key ignores env order and changes with env or command', () => {
    const base = { command: ['vllm', 'serve', 'm', '--port', '{port}'], env: { A: '1', B: '2' }, profile: 'vllm' };
    assert.equal(configKey(base), configKey({ ...base, env: { B: '2', A: '1' } }));
    assert.notEqual(configKey(base), configKey({ ...base, env: { A: '1', B: '3' } }));
    assert.notEqual(configKey(base), configKey({ ...base, unsetEnv: ['NCCL_PROTO'] }));
  });
});
