import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { collectFingerprint, servelabGitSha } from '../src/fingerprint/collect.js';
import { redactValue } from '../src/fingerprint/env.js';
import type { CommandResult, CommandRunner } from '../src/fingerprint/types.js';

/** A command runner that really spawns processes on this machine, with an optional PATH override. */
function processExecutor(path?: string): CommandRunner {
  return {
    hostLabel: 'local',
    run(argv: string[], timeoutMs = 20_000): Promise<CommandResult> {
      return new Promise((resolve) => {
        const env = path === undefined ? process.env : { ...process.env, PATH: path };
        const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.on('error', (error) => resolve({ code: null, stdout, stderr: stderr + error.message }));
        child.on('close', (code) => resolve({ code, stdout, stderr }));
      });
    },
  };
}

const serverEnv = {
  PATH: '/usr/bin:/bin',
  HOME: '/root',
  NCCL_PROTO: 'LL',
  CUDA_VISIBLE_DEVICES: '0',
  HF_TOKEN: 'hf_secret_value',
  VLLM_API_KEY: 'sk-secret',
};
const serverCommand = ['vllm', 'serve', 'meta-llama/Llama-3.1-8B', '--api-key', 'sk-cli-secret', '--port', '{port}'];

async function hasCommand(name: string): Promise<boolean> {
  const result = await processExecutor().run(['sh', '-c', `command -v ${name}`]);
  return result.code === 0;
}

describe('collectFingerprint on this machine (real processes)', () => {
  test('host facts, GPUs, env filtering and redaction, model, servelab version', async () => {
    const fp = await collectFingerprint(processExecutor(), { command: serverCommand, env: serverEnv });
    assert.equal(fp.executor, 'local');
    assert.equal(fp.host.hostname, hostname());
    assert.equal(fp.host.os, 'Linux');
    assert.equal(fp.host.kernel, release());
    assert.ok(fp.host.cpus >= 1);
    assert.ok(fp.host.cpuModel.length > 0);
    assert.ok(Math.abs(fp.host.memoryGiB - totalmem() / 1024 ** 3) < 0.2, `${fp.host.memoryGiB} GiB`);
    if (!(await hasCommand('nvidia-smi'))) assert.deepEqual(fp.gpus, []);

    assert.deepEqual(fp.env, {
      NCCL_PROTO: 'LL',
      CUDA_VISIBLE_DEVICES: '0',
      HF_TOKEN: redactValue('hf_secret_value'),
      VLLM_API_KEY: redactValue('sk-secret'),
    });
    assert.deepEqual(fp.command, ['vllm', 'serve', 'meta-llama/Llama-3.1-8B', '--api-key', redactValue('sk-cli-secret'), '--port', '{port}']);
    assert.ok(!JSON.stringify(fp).includes('secret'));
    assert.equal(fp.model, 'meta-llama/Llama-3.1-8B');

    const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal(fp.servelabVersion, pkg.version);
    // This checkout is a git repository: the sha is the HEAD commit, marked dirty while files are being edited.
    const head = await processExecutor().run(['git', '-C', new URL('../..', import.meta.url).pathname, 'rev-parse', 'HEAD']);
    if (head.code === 0) assert.match(fp.servelabGitSha ?? '', new RegExp(`^${head.stdout.trim()}(-dirty)?$`));
    assert.equal(await servelabGitSha(), fp.servelabGitSha);
  });

  test('GPU and package facts come from nvidia-smi and python on the PATH', async (t) => {
    const bin = await mkdtemp(join(tmpdir(), 'servelab-fp-'));
    t.after(() => rm(bin, { recursive: true, force: true }));
    await writeFile(
      join(bin, 'nvidia-smi'),
      '#!/bin/sh\nprintf "0, NVIDIA H200, 550.54.15, 143771, 1980, 1980, 700.00\\n1, NVIDIA H200, 550.54.15, 143771, 345, 1980, 700.00\\n"\n',
    );
    // A python that answers the package probe like an environment with vllm and torch installed.
    await writeFile(join(bin, 'python3'), '#!/bin/sh\nprintf "vllm==0.6.3\\ntorch==2.4.0+cu121\\n"\n');
    await chmod(join(bin, 'nvidia-smi'), 0o755);
    await chmod(join(bin, 'python3'), 0o755);

    const fp = await collectFingerprint(processExecutor(`${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`), { command: ['python3', '-m', 'vllm.entrypoints.openai.api_server', '--model', 'm'], env: {}, model: 'given-model' });
    assert.deepEqual(fp.gpus.map((gpu) => [gpu.index, gpu.name, gpu.driver, gpu.memoryMiB, gpu.smClockMHz]), [
      [0, 'NVIDIA H200', '550.54.15', 143771, 1980],
      [1, 'NVIDIA H200', '550.54.15', 143771, 345],
    ]);
    assert.deepEqual(fp.packages, { vllm: '0.6.3', torch: '2.4.0+cu121' });
    assert.equal(fp.model, 'given-model');
  });

  test('a host without any of the tools still gives a fingerprint (empty facts, no error)', async (t) => {
    const empty = await mkdtemp(join(tmpdir(), 'servelab-fp-empty-'));
    t.after(() => rm(empty, { recursive: true, force: true }));
    const fp = await collectFingerprint(processExecutor(empty), { command: ['llama-server', '-m', '/m.gguf'], env: { OMP_NUM_THREADS: '8' } });
    assert.deepEqual(fp.gpus, []);
    assert.deepEqual(fp.packages, {});
    assert.deepEqual(fp.host, { hostname: '', os: '', kernel: '', cpuModel: '', cpus: 0, memoryGiB: 0 });
    assert.deepEqual(fp.env, { OMP_NUM_THREADS: '8' });
    assert.equal(fp.model, '/m.gguf');
  });
});
