import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { collectFingerprint, servelabGitSha } from '../src/fingerprint/collect.js';
import { diffFingerprints } from '../src/fingerprint/diff.js';
import { redactor } from '../src/util/redact.js';

const redactValue = (value: string): string => redactor().value(value);

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

  test('multi-GPU facts, build identity, CUDA/NCCL versions and interconnect; the diff names them', async (t) => {
    const bin = await mkdtemp(join(tmpdir(), 'servelab-fp-'));
    t.after(() => rm(bin, { recursive: true, force: true }));
    // nvidia-smi replaying real H200 captures (-q) and the documented two-GPU topo/nvlink formats (synthetic-*).
    const fixtures = fileURLToPath(new URL('../../test/fixtures/nvidia-smi/', import.meta.url));
    await writeFile(
      join(bin, 'nvidia-smi'),
      [
        '#!/bin/sh',
        'case "$1" in',
        '  --query-gpu=*) printf "0, NVIDIA H200, 580.159.04, 143771, 1980, 1980, 700.00, 00000000:00:06.0, Enabled, 3201\\n1, NVIDIA H200, 580.159.04, 143771, 345, 1980, 700.00, 00000000:00:07.0, Enabled, 3201\\n" ;;',
        `  -q) cat '${fixtures}nvidia-smi-q.txt' ;;`,
        `  topo) cat '${fixtures}synthetic-topo-m-2gpu.txt' ;;`,
        `  nvlink) cat "$NVLINK_FIXTURE" ;;`,
        '  *) exit 2 ;;',
        'esac',
        '',
      ].join('\n'),
    );
    // A python that answers the package probe (vllm installed from git) and the torch probe.
    await writeFile(
      join(bin, 'python3'),
      '#!/bin/sh\ncase "$2" in\n  *"import torch"*) printf "cuda.torch=13.0\\nnccl.torch=2.28.9\\n" ;;\n  *) printf "vllm==0.11.0\\nvllm.commit==0123456789abcdef0123456789abcdef01234567\\ntorch==2.11.0+cu130\\n" ;;\nesac\n',
    );
    await chmod(join(bin, 'nvidia-smi'), 0o755);
    await chmod(join(bin, 'python3'), 0o755);

    const command = ['python3', '-m', 'vllm.entrypoints.openai.api_server', '--model', 'm', '--tensor-parallel-size', '2'];
    const collect = (nvlink: string, env: Record<string, string>) => {
      process.env.NVLINK_FIXTURE = join(fixtures, nvlink);
      return collectFingerprint(processExecutor(`${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`), { command, env, model: 'given-model' });
    };
    t.after(() => delete process.env.NVLINK_FIXTURE);
    const tuned = await collect('synthetic-nvlink-s-2gpu.txt', { NCCL_PROTO: 'LL', NCCL_ALGO: 'Ring', NCCL_P2P_LEVEL: 'SYS' });
    assert.deepEqual(
      tuned.gpus.map((gpu) => [gpu.index, gpu.name, gpu.driver, gpu.memoryMiB, gpu.smClockMHz, gpu.busId, gpu.persistenceMode, gpu.maxMemClockMHz]),
      [
        [0, 'NVIDIA H200', '580.159.04', 143771, 1980, '00000000:00:06.0', 'Enabled', 3201],
        [1, 'NVIDIA H200', '580.159.04', 143771, 345, '00000000:00:07.0', 'Enabled', 3201],
      ],
    );
    assert.deepEqual(tuned.packages, { vllm: '0.11.0', 'vllm.commit': '0123456789abcdef0123456789abcdef01234567', torch: '2.11.0+cu130' });
    assert.equal(tuned.model, 'given-model');
    const { 'cuda.nvcc': _nvcc, 'nccl.system': _nccl, ...system } = tuned.system ?? {};
    assert.deepEqual(system, {
      'cuda.driver': '13.0',
      'cuda.torch': '13.0',
      'nccl.torch': '2.28.9',
      'topology.GPU0-GPU1': 'NV18',
      'topology.GPU0-NIC0': 'PIX',
      'topology.GPU1-GPU0': 'NV18',
      'topology.GPU1-NIC0': 'SYS',
      'topology.GPU0 CPU Affinity': '0-47',
      'topology.GPU0 NUMA Affinity': '0',
      'topology.GPU1 CPU Affinity': '48-95',
      'topology.GPU1 NUMA Affinity': '1',
      'nvlink.0': '18 links × 26.562 GB/s',
      'nvlink.1': '17 links × 26.562 GB/s, 1 inactive',
    });

    // After a "reboot": NCCL tuning gone, no NVLink reported. The diff lists every NCCL variable and the links.
    const rebooted = await collect('nvlink-s.txt', {});
    const changes = diffFingerprints(tuned, rebooted).map((change) => `${change.key}: ${change.before ?? '(unset)'} → ${change.after ?? '(unset)'}`);
    assert.deepEqual(changes, [
      'env.NCCL_PROTO: LL → (unset)',
      'env.NCCL_ALGO: Ring → (unset)',
      'env.NCCL_P2P_LEVEL: SYS → (unset)',
      'system.nvlink.0: 18 links × 26.562 GB/s → (unset)',
      'system.nvlink.1: 17 links × 26.562 GB/s, 1 inactive → (unset)',
      'system.nvlink: (unset) → none',
    ]);
  });

  test('the slow torch probe runs once per executor and torch version, the package probe at every start', async (t) => {
    const bin = await mkdtemp(join(tmpdir(), 'servelab-fp-torch-'));
    t.after(() => rm(bin, { recursive: true, force: true }));
    // Each probe leaves a line in probes.log; the torch version comes from the file `torch-version`.
    await writeFile(join(bin, 'torch-version'), '2.11.0\n');
    await writeFile(
      join(bin, 'python3'),
      `#!/bin/sh\ncase "$2" in\n  *"import torch"*) echo torch >> '${bin}/probes.log'; printf "cuda.torch=13.0\\n" ;;\n  *) echo packages >> '${bin}/probes.log'; printf "torch==%s\\n" "$(cat '${bin}/torch-version')" ;;\nesac\n`,
    );
    await chmod(join(bin, 'python3'), 0o755);
    const executor = processExecutor(`${bin}:/usr/bin:/bin`);
    const collect = () => collectFingerprint(executor, { command: ['python3', '-m', 'vllm.entrypoints.openai.api_server'], env: {} });
    const first = await collect();
    const second = await collect();
    await writeFile(join(bin, 'torch-version'), '2.12.0\n');
    const upgraded = await collect();
    assert.deepEqual([first.system?.['cuda.torch'], second.system?.['cuda.torch'], upgraded.packages.torch], ['13.0', '13.0', '2.12.0']);
    assert.deepEqual((await readFile(join(bin, 'probes.log'), 'utf8')).trim().split('\n'), ['packages', 'torch', 'packages', 'packages', 'torch']);
  });

  test('llama.cpp build identity: version and commit from --version (stderr)', async (t) => {
    const bin = await mkdtemp(join(tmpdir(), 'servelab-fp-llama-'));
    t.after(() => rm(bin, { recursive: true, force: true }));
    await writeFile(join(bin, 'llama-server'), '#!/bin/sh\necho "version: 6123 (a1b2c3d4)" >&2\necho "built with cc (GCC) 12.2.0 for x86_64-linux-gnu" >&2\n');
    await chmod(join(bin, 'llama-server'), 0o755);
    const fp = await collectFingerprint(processExecutor(`${bin}:/usr/bin:/bin`), { command: [join(bin, 'llama-server'), '-m', '/m.gguf'], env: {} });
    assert.equal(fp.packages['llama.cpp'], '6123');
    assert.equal(fp.packages['llama.cpp.commit'], 'a1b2c3d4');
  });

  test('the host facts and the toolkit versions take one shell each: four process starts per fingerprint, not eight', async () => {
    const inner = processExecutor();
    const programs: string[] = [];
    const counting: CommandRunner = {
      hostLabel: 'local',
      run(argv, timeoutMs) {
        programs.push(argv[0]!);
        return inner.run(argv, timeoutMs);
      },
    };
    const fp = await collectFingerprint(counting, { command: ['node', 'server.js'], env: {} });
    assert.deepEqual(programs.sort(), ['nvidia-smi', 'python3', 'sh', 'sh']);
    assert.equal(fp.host.kernel, release());
    assert.ok(fp.host.cpus >= 1 && fp.host.cpuModel.length > 0 && fp.host.memoryGiB > 0);
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
