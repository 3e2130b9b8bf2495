import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  modelFromCommand,
  parseCpuModel,
  parseMeminfoGiB,
  parseNvidiaSmiCsv,
  parsePackageVersions,
  parseUname,
  parseVersionOutput,
} from '../src/fingerprint/parse.js';

describe('parseNvidiaSmiCsv', () => {
  test('two GPUs, units stripped', () => {
    const csv =
      '0, NVIDIA H200, 550.54.15, 143771, 1980, 1980, 700.00, 00000000:00:06.0, Enabled, 3201\n' +
      '1, NVIDIA H200, 550.54.15, 143771, 345, 1980, 700.00, 00000000:00:07.0, Disabled, 3201\n';
    const facts = { name: 'NVIDIA H200', driver: '550.54.15', memoryMiB: 143771, maxSmClockMHz: 1980, powerLimitW: 700, maxMemClockMHz: 3201 };
    assert.deepEqual(parseNvidiaSmiCsv(csv), [
      { index: 0, ...facts, smClockMHz: 1980, busId: '00000000:00:06.0', persistenceMode: 'Enabled' },
      { index: 1, ...facts, smClockMHz: 345, busId: '00000000:00:07.0', persistenceMode: 'Disabled' },
    ]);
  });

  test('[N/A] / [Not Supported] fields are left out; noise lines skipped', () => {
    const csv = 'WARNING: something odd\n0, Tesla T4, 535.104.05, 15360, [N/A], 1590, [Not Supported], [N/A], [N/A], [N/A]\n\n';
    assert.deepEqual(parseNvidiaSmiCsv(csv), [{ index: 0, name: 'Tesla T4', driver: '535.104.05', memoryMiB: 15360, maxSmClockMHz: 1590 }]);
  });

  test('empty output → no GPUs', () => {
    assert.deepEqual(parseNvidiaSmiCsv(''), []);
  });
});

describe('host parsers', () => {
  test('meminfo MemTotal in GiB, one decimal', () => {
    assert.equal(parseMeminfoGiB('MemTotal:       131911932 kB\nMemFree:         1234 kB\n'), 125.8);
    assert.equal(parseMeminfoGiB('nothing'), 0);
  });

  test('cpuinfo: x86 model name, ARM fallbacks', () => {
    assert.equal(parseCpuModel('processor\t: 0\nmodel name\t: AMD EPYC   9654 96-Core Processor\nmodel name\t: other\n'), 'AMD EPYC 9654 96-Core Processor');
    assert.equal(parseCpuModel('processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n'), 'implementer 0x41 part 0xd4f');
    assert.equal(parseCpuModel(''), '');
  });

  test('uname -snr', () => {
    assert.deepEqual(parseUname('Linux gpu-box-1 6.8.0-45-generic\n'), { os: 'Linux', hostname: 'gpu-box-1', kernel: '6.8.0-45-generic' });
  });
});

describe('versions', () => {
  test('package probe lines', () => {
    assert.deepEqual(parsePackageVersions('vllm==0.6.3\ntorch==2.4.0+cu121\ngarbage line\n'), { vllm: '0.6.3', torch: '2.4.0+cu121' });
  });

  test('--version outputs of native servers', () => {
    assert.equal(parseVersionOutput('ollama version is 0.3.12'), '0.3.12');
    assert.equal(parseVersionOutput('text-generation-launcher 2.0.4'), '2.0.4');
    assert.equal(parseVersionOutput('version: 3600 (2fb92678)\nbuilt with cc'), '3600');
    assert.equal(parseVersionOutput('nothing here'), undefined);
  });
});

describe('modelFromCommand', () => {
  test('flags of each server family', () => {
    assert.equal(modelFromCommand(['python', '-m', 'vllm.entrypoints.openai.api_server', '--model', 'meta-llama/Llama-3.1-8B']), 'meta-llama/Llama-3.1-8B');
    assert.equal(modelFromCommand(['python3', '-m', 'sglang.launch_server', '--model-path=/models/qwen']), '/models/qwen');
    assert.equal(modelFromCommand(['llama-server', '-m', '/models/q4.gguf', '--port', '{port}']), '/models/q4.gguf');
    assert.equal(modelFromCommand(['text-generation-launcher', '--model-id', 'bigscience/bloom-560m']), 'bigscience/bloom-560m');
    assert.equal(modelFromCommand(['/venv/bin/vllm', 'serve', 'Qwen/Qwen2-7B', '--port', '{port}']), 'Qwen/Qwen2-7B');
  });

  test('python -m is a module, not a model; no model → undefined', () => {
    assert.equal(modelFromCommand(['python', '-m', 'some.server', '--port', '8000']), undefined);
    assert.equal(modelFromCommand(['ollama', 'serve']), undefined);
    assert.equal(modelFromCommand([]), undefined);
  });
});
