/**
 * Real vLLM/SGLang logs from public threads (test/fixtures/engine-logs/index.json) replayed through LogMonitor, the
 * code `launch` reads a server log with: the phases it reports and the cause it fails with (none on a good start).
 * `servelab log` (replayLog) must read each file the same way.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LogMonitor } from '../src/launch/log-monitor.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { classifyLogLine } from '../src/profiles/classify.js';
import { guessProfileName } from '../src/profiles/log-guess.js';
import { lineTimeMs } from '../src/profiles/log-time.js';
import { replayLog } from '../src/profiles/replay.js';
import { StartupLog } from '../src/profiles/startup-log.js';
import { versionNote } from '../src/profiles/version-note.js';
import type { MonitorEvent } from '../src/ready/wait.js';

const FIXTURES = fileURLToPath(new URL('../../test/fixtures/engine-logs/', import.meta.url));
const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));

interface Entry {
  file: string;
  source: string;
  profile: string;
  phases: string[];
  cause: string | null;
}

const INDEX = JSON.parse(readFileSync(join(FIXTURES, 'index.json'), 'utf8')) as { logs: Entry[] };
const profile = (name: string) => BUILTIN_PROFILES[name]!;
const readLines = (file: string) => readFileSync(join(FIXTURES, file), 'utf8').split('\n');

function tempDir(t: TestContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-engine-logs-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The monitor's settle timer is unref'd (it must not hold a CLI open): a ref'd deadline keeps the test's loop alive. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The cause a startup reading settles on for these lines (same rules as LogMonitor and replayLog). */
function causeOf(profileName: string, lines: string[]): string | undefined {
  const reading = new StartupLog(profile(profileName));
  for (const line of lines) reading.accept(line);
  return reading.fatal?.name;
}

describe('engine log corpus through the launch pipeline', () => {
  test('the corpus has at least 20 real logs, each with its source thread', () => {
    assert.ok(INDEX.logs.length >= 20, `${INDEX.logs.length} logs`);
    for (const entry of INDEX.logs) assert.match(entry.source, /^https:\/\/github\.com\/[\w.-]+\/[\w.-]+\/(issues|pull)\/\d+$/, entry.file);
    assert.ok(INDEX.logs.filter((entry) => entry.cause === null).length >= 8, 'good starts');
  });

  for (const entry of INDEX.logs) {
    test(`${entry.file}: ${entry.cause ?? 'no failure'}, phases ${entry.phases.join(' → ') || 'none'}`, async (t) => {
      const path = join(tempDir(t), 'server.log');
      writeFileSync(path, readFileSync(join(FIXTURES, entry.file)));
      const monitor = new LogMonitor(profile(entry.profile), path, 0, 10);
      t.after(() => monitor.close());
      const events: MonitorEvent[] = [];
      const fatal = new Promise<MonitorEvent>((resolve) => {
        monitor.subscribe((event) => {
          events.push(event);
          if (event.type === 'fatal') resolve(event);
        });
      });
      monitor.drain();
      assert.deepEqual(
        events.filter((event) => event.type === 'phase').map((event) => (event as { name: string }).name),
        entry.phases,
      );
      if (entry.cause !== null) {
        // The server is still up: the most specific cause is reported once the settle time ends.
        const reported = (await within(fatal, 5000, 'fatal event')) as { name: string; line: string };
        assert.equal(reported.name, entry.cause, reported.line);
      }
      monitor.processExited({ code: 1, signal: null });
      const exit = events.find((event) => event.type === 'exit') as { fatal?: { name: string } } | undefined;
      assert.equal(exit?.fatal?.name ?? null, entry.cause);

      const replay = replayLog(profile(entry.profile), readLines(entry.file));
      assert.deepEqual(
        replay.phases.map((phase) => phase.name),
        entry.phases,
      );
      assert.equal(replay.fatal?.name ?? null, entry.cause);
    });
  }
});

describe('cause specificity', () => {
  test("a root cause beats the engine's wrapper, whichever comes first", () => {
    const wrapper = '(APIServer pid=223598) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}';
    const oom = '(EngineCore pid=6849) ERROR 04-19 15:32:42 [core.py:1108] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 84.00 MiB.';
    assert.equal(causeOf('vllm', [wrapper, oom]), 'CUDA out of memory');
    assert.equal(causeOf('vllm', [oom, wrapper]), 'CUDA out of memory');
    const scheduler = '[2026-05-01 15:16:15 TP2] Scheduler hit an exception: Traceback (most recent call last):';
    const sigquit = '[2026-05-01 15:16:15] Received sigquit from a child process. It usually means the child failed.';
    const kv = 'ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5.';
    assert.equal(causeOf('sglang', [sigquit, scheduler, kv]), 'no KV cache memory');
    // ktransformers#1969: the parent's sigquit line comes first; the scheduler's own exception names the failure.
    assert.equal(causeOf('sglang', [sigquit, scheduler]), 'scheduler exception');
    assert.equal(causeOf('sglang', [sigquit]), 'scheduler died');
  });

  test("SGLang's negative profiled KV budget is the cause, with the next step; a draft worker's after the target's capture is not", () => {
    const negative = '[2025-07-02 07:41:59 DP0 TP0] max_total_tokens=131072 is larger than the profiled value -561981. Use the profiled value instead.';
    const reading = new StartupLog(profile('sglang'));
    reading.accept('[2025-07-02 07:41:58 DP0 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=21.73 GB');
    assert.equal(reading.accept(negative)?.kind, 'first-fatal');
    assert.equal(reading.fatal?.name, 'no KV cache memory');
    assert.match(reading.fatal!.hint, /raise --mem-fraction-static/);
    // A positive profiled value is SGLang clamping a too-large --max-total-tokens: a warning, not a failure.
    assert.equal(causeOf('sglang', ['max_total_tokens=200000 is larger than the profiled value 163089. Use the profiled value instead.']), undefined);
    // SGLang's speculative-decoding docs notebook (EAGLE-2 + torch.compile, run of 2026-02-11): the draft worker's
    // line after the target's graphs were captured, and the server then served.
    const eagle = [
      'Capturing batches (bs=1 avail_mem=47.13 GB): 100%|██████████| 4/4 [00:41<00:00, 11.99s/it]',
      '[2026-02-11 06:44:58] SPECULATIVE_MOE_RUNNER_BACKEND is not initialized, using auto backend',
      '[2026-02-11 06:45:01] max_total_tokens=20480 is larger than the profiled value -89624. Use the profiled value instead.',
      'Capturing batches (bs=4 avail_mem=1.85 GB):   0%|          | 0/4 [00:00<?, ?it/s]',
    ];
    assert.equal(causeOf('sglang', eagle), undefined);
  });

  test('out-of-memory in every wording is OOM, not a generic CUDA error', () => {
    for (const line of [
      'RuntimeError: CUDA error: out of memory', // sglang#4547
      '(EngineCore pid=77) ERROR 05-05 07:35:19 [core.py:1136] RuntimeError: CUDA driver error: out of memory', // club-3090#60
      'torch.AcceleratorError: CUDA error: out of memory',
    ]) {
      assert.equal(causeOf('vllm', [line]), 'CUDA out of memory', line);
    }
    assert.equal(causeOf('vllm', ['torch.AcceleratorError: CUDA error: an illegal memory access was encountered']), 'CUDA error');
  });

  test("SGLang's scheduler SIGKILLed at init is the host OOM killer; other exit codes stay a scheduler death", () => {
    const died = (code: number) =>
      `RuntimeError: Rank 0 scheduler died during initialization (exit code: ${code}). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run \`dmesg -T | grep -i oom\` to check.`;
    assert.equal(causeOf('sglang', [died(-9)]), 'killed');
    assert.equal(causeOf('sglang', [died(-11)]), 'scheduler died');
  });

  test("benign NCCL IB port events (NCCL_DEBUG=WARN, as servelab's hint asks) do not fail a start; IB errors do", () => {
    // Format of ncclIbAsyncThreadMain's WARN (nccl src/transport/net_ib.cc), with and without the device (nccl#1710).
    for (const event of ['port active', 'client reregistration', 'GID table change']) {
      for (const device of ['', 'mlx5_0:1 ']) {
        const line = `node201:127799:127863 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : ${device}Got async event : ${event}`;
        assert.equal(classifyLogLine(profile('vllm'), line), undefined, line);
      }
    }
    assert.equal(causeOf('vllm', ['node201:1:2 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error']), 'NCCL error');
  });
});

describe('phases of current engines', () => {
  test('SGLang >= 0.5.15: graph capture is its own phase, KV sizing after it (cuda_graph_setup.py, sglang#31168)', () => {
    const lines = [
      '[2026-09-01 10:00:00 TP0] Load weight end. elapsed=12.00 s',
      '[2026-09-01 10:00:01 TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8], avail mem=8.12 GB',
      'Capturing batches (bs=8 avail_mem=8.10 GB):  25%|██▌       | 1/4 [00:01<00:03,  1.00it/s]',
      '[2026-09-01 10:00:31 TP0] Capture target decode CUDA graph end. elapsed=30.00 s, mem usage=1.00 GB, avail mem=7.12 GB.',
      '[2026-09-01 10:00:32 TP0] Post-capture KV sizing: KV cache allocated. dtype: torch.bfloat16, #tokens: 12288, KV size: 1.00 GB, avail mem=6.00 GB',
      '[2026-09-01 10:00:40] The server is fired up and ready to roll!',
    ];
    const replay = replayLog(profile('sglang'), lines);
    assert.deepEqual(
      replay.phases.map((phase) => [phase.name, phase.atMs! - replay.phases[0]!.atMs!]),
      [
        ['weights loaded', 0],
        ['capturing CUDA graphs', 1000],
        ['CUDA graphs captured', 31_000],
        ['allocating KV cache', 32_000],
        ['fired up', 40_000],
      ],
    );
    assert.equal(replay.fatal, undefined);
  });

  test('TGI >= 2 and Ollama 2026 lines: download check, model loading, runner started; runner OOM is OOM', () => {
    assert.deepEqual(
      classifyLogLine(
        profile('tgi'),
        '2025-07-04T12:35:04.406496Z  INFO download: text_generation_launcher: Starting check and download process for /models/gemma-3-27b-it',
      ),
      { kind: 'phase', name: 'downloading weights' },
    );
    const ollama = profile('ollama');
    assert.deepEqual(
      classifyLogLine(
        ollama,
        'time=2026-03-26T23:40:07.930Z level=INFO source=server.go:1384 msg="waiting for server to become available" status="llm server loading model"',
      ),
      { kind: 'phase', name: 'loading model' },
    );
    assert.deepEqual(classifyLogLine(ollama, 'time=2026-03-26T23:40:08.182Z level=INFO source=server.go:1388 msg="llama runner started in 0.34 seconds"'), {
      kind: 'phase',
      name: 'model loaded',
    });
    assert.equal(causeOf('ollama', ['Error: llama runner process has terminated: cudaMalloc failed: out of memory']), 'CUDA out of memory');
    assert.equal(causeOf('ollama', ['Error: llama runner process has terminated: exit status 2']), 'model runner failed');
  });

  test("vLLM's torch.compile, CUDA graph profiling and the new server lines are phases", () => {
    const vllm = profile('vllm');
    const phaseOf = (line: string) => classifyLogLine(vllm, line);
    assert.deepEqual(phaseOf('(APIServer pid=1) INFO 08-03 09:00:01 [api_server.py:672] vLLM server version 0.21.0'), {
      kind: 'phase',
      name: 'initializing engine',
    });
    assert.deepEqual(phaseOf('(EngineCore pid=1) INFO 04-13 22:09:33 [backends.py:1130] Dynamo bytecode transform time: 0.60 s'), {
      kind: 'phase',
      name: 'compiling (torch.compile)',
    });
    assert.deepEqual(phaseOf('(APIServer pid=1) INFO 08-03 09:00:10 [api_server.py:680] Starting vLLM server on http://0.0.0.0:8000'), {
      kind: 'phase',
      name: 'starting API server',
    });
  });
});

describe('log reading helpers', () => {
  test('line times: dated, year-less vLLM/SGLang, Python logging; none on a progress bar', () => {
    assert.equal(lineTimeMs('[2025-11-30 11:18:05] INFO:     Application startup complete.'), Date.UTC(2025, 10, 30, 11, 18, 5));
    assert.equal(lineTimeMs('2025-03-07 23:50:27,531 - __main__ - INFO - x'), Date.UTC(2025, 2, 7, 23, 50, 27, 531));
    assert.equal(lineTimeMs('INFO 06-22 02:55:02 [core.py:172] x')! - lineTimeMs('INFO 06-22 02:54:47 [x.py:1] y')!, 15_000);
    assert.equal(lineTimeMs('[12-16 14:27:08] Rank 0 scheduler is dead.')! - lineTimeMs('[12-16 14:27:00] x')!, 8000);
    assert.equal(lineTimeMs('Capturing CUDA graphs: 100%|██████████| 67/67 [00:14<00:00,  4.71it/s]'), undefined);
  });

  test('the profile is guessed from the log', () => {
    assert.equal(guessProfileName(readLines('vllm-start-v0-profiling-2025-03.log')), 'vllm');
    assert.equal(guessProfileName(readLines('sglang-start-2025-11.log')), 'sglang');
    assert.equal(guessProfileName(['2024-05-01T10:00:00Z  INFO text_generation_launcher: Starting shard rank=0']), 'tgi');
    assert.equal(guessProfileName(['hello']), 'openai');
  });

  test('only the last launch of a servelab launch log is replayed', () => {
    const lines = [
      '--- servelab launch 2026-12-04T10:00:00Z: vllm serve m',
      'torch.OutOfMemoryError: CUDA out of memory.',
      '--- servelab launch 2026-12-04T10:05:00Z: vllm serve m',
      'INFO 12-04 10:05:10 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000',
    ];
    const replay = replayLog(profile('vllm'), lines);
    assert.equal(replay.fatal, undefined);
    assert.deepEqual(replay.phases, [{ name: 'starting API server', lineNumber: 4, atMs: Date.UTC(2000, 11, 4, 10, 5, 10) }]);
  });

  test('a newer engine than the profile was checked against gets a one-line note', () => {
    assert.equal(
      versionNote(profile('sglang'), { sglang: '0.5.17', torch: '2.9.1' }),
      "sglang 0.5.17 is newer than the profile's 0.5.15: check with `servelab log`",
    );
    assert.match(versionNote(profile('sglang'), { sglang: '0.5.16.dev20260512+g339e36e' }) ?? '', /0\.5\.16\.dev/);
    assert.equal(versionNote(profile('sglang'), { sglang: '0.5.15' }), undefined);
    assert.equal(versionNote(profile('sglang'), { sglang: '0.4.10' }), undefined);
    assert.equal(versionNote(profile('vllm'), { sglang: '9.0.0' }), undefined);
    assert.equal(versionNote(profile('openai'), { vllm: '9.0.0' }), undefined);
    assert.deepEqual(replayLog(profile('vllm'), readLines('vllm-start-engine-version-2026-05.log')).versions, { vllm: '0.14.1' });
  });
});

describe('servelab log', () => {
  const run = (...args: string[]) => spawnSync(process.execPath, [BIN, 'log', ...args], { encoding: 'utf8' });

  test('a failed start: the most specific cause, exit 4', () => {
    const result = run(join(FIXTURES, 'sglang-nccl-then-sigquit-2025-03.log'));
    assert.equal(result.status, 4, result.stderr);
    assert.match(result.stdout, /^profile: sglang \(guessed from the log/m);
    assert.match(result.stdout, /^cause: NCCL error \(line 13\)\n {2}RuntimeError: NCCL error: unhandled system error/m);
  });

  test('a good start: phases with their times, exit 0', () => {
    const result = run(join(FIXTURES, 'vllm-start-sm120-2025-06.log'), '--profile', 'vllm');
    assert.equal(result.status, 0, result.stderr);
    // torch.compile 02:54:36 → KV cache 02:54:47 → capture (progress bar: the last time before it) → 02:55:02.
    assert.match(result.stdout, /\+0ms +compiling \(torch\.compile\) +line 1 +\(11s\)$/m);
    assert.match(result.stdout, /\+11s +capturing CUDA graphs +line 10 +\(15s\)$/m);
    assert.match(result.stdout, /\+26s +engine initialized +line 11$/m);
    assert.match(result.stdout, /^cause: none/m);
  });

  test('--profiles FILE adds patterns; usage errors exit 2', (t) => {
    const dir = tempDir(t);
    const profiles = join(dir, 'profiles.yaml');
    writeFileSync(
      profiles,
      'profiles:\n  mine:\n    extends: vllm\n    fatalPatterns:\n      - { name: "gated model", pattern: "Cannot access gated repo", hint: "run huggingface-cli login" }\n',
    );
    const log = join(dir, 'server.log');
    writeFileSync(log, 'OSError: Cannot access gated repo for url https://huggingface.co/meta-llama/x\n');
    const result = run(log, '--profile', 'mine', '--profiles', profiles);
    assert.equal(result.status, 4, result.stderr);
    assert.match(result.stdout, /^cause: gated model \(line 1\)/m);
    assert.equal(run(join(dir, 'missing.log')).status, 2);
    assert.equal(run(log, '--profile', 'nope').status, 2);
  });
});

describe('servelab launch', () => {
  test('a failed start names the most specific cause and notes an engine newer than the profile', (t) => {
    const dir = tempDir(t);
    const script = [
      "echo '(APIServer pid=1) INFO 12-04 10:00:00 [api_server.py:1] vLLM API server version 0.99.0'",
      "echo '(EngineCore pid=2) ERROR 12-04 10:00:09 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.'",
      "echo '(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}'",
      'exit 1',
    ].join('; ');
    const args = ['launch', '--profile', 'vllm', '--store', join(dir, 'store.db'), '--log', join(dir, 'server.log'), '--', 'sh', '-c', script];
    const result = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(result.status, 4, result.stderr);
    assert.match(result.stderr, /log shows CUDA out of memory/);
    assert.match(result.stderr, /servelab: note: vllm 0\.99\.0 is newer than the profile's 0\.19: check with `servelab log`/);
  });
});
