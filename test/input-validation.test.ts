import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { openStore } from '../src/store/db.js';
import { UserError } from '../src/util/errors.js';
import { cli, tempDir, writeExperiment } from './support-experiment.js';

/**
 * Input files (traces, datasets, accuracy sets) are checked when the experiment file loads: `plan`, `run --dry-run`
 * and `run` refuse a bad one before any server starts. The server command here would leave a file behind if it ran.
 */
function experimentOf(dir: string, client: Record<string, unknown>, rest: Record<string, unknown> = {}): string {
  const started = join(dir, 'server-started');
  return writeExperiment(dir, 'exp.yaml', {
    server: { command: ['sh', '-c', `touch "${started}"; exec sleep 30`], readyTimeout: '5m' },
    client: { warmupRequests: 0, ...client },
    workloads: [{ kind: 'trace' }],
    trials: 1,
    ...rest,
  });
}

/** `plan`, `run --dry-run` and `run` refuse, exit 2, one line and its hint, with no server started and no run stored. */
async function assertRefusedBeforeStart(dir: string, file: string, message: RegExp): Promise<void> {
  const store = join(dir, 'servelab.db');
  for (const args of [
    ['plan', file],
    ['run', file, '--dry-run'],
    ['run', file],
  ]) {
    const result = await cli(args, { store, timeoutMs: 60_000 });
    assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
    assert.match(result.stderr, message, args.join(' '));
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  }
  assert.ok(!existsSync(join(dir, 'server-started')), 'no server was started');
  const db = openStore(store);
  try {
    assert.equal((db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n, 0, 'no run row');
  } finally {
    db.close();
  }
}

/** The other cases: the same refusal from loading the file (what plan and run do first), in-process. */
function assertRefusedAtLoad(file: string, message: RegExp): void {
  assert.throws(
    () => loadExperiment(file),
    (error: unknown) => error instanceof UserError && error.exitCode === 2 && message.test(`${error.message}\n${error.hint}`),
  );
}

const line = (inputLength: number, outputLength = 4, timestamp = 0): string =>
  `${JSON.stringify({ timestamp, input_length: inputLength, output_length: outputLength })}\n`;

test('a trace line of 10^9 tokens is refused with its file:line and the cap, before any server starts', async (t) => {
  const dir = tempDir(t, 'inputs-huge');
  const trace = join(dir, 'trace.jsonl');
  writeFileSync(trace, line(100) + line(1_000_000_000, 4, 10));
  const file = experimentOf(dir, { prompts: { kind: 'trace', path: 'trace.jsonl', format: 'mooncake' } });
  await assertRefusedBeforeStart(
    dir,
    file,
    /trace\.jsonl:2: 1000000000 prompt \+ 4 output tokens exceed servelab's cap of 1048576 tokens[^\n]*\n[^\n]*client\.contextTokens/,
  );
});

test("a trace line beyond the model's context (client.contextTokens), a negative length, a too-short window: refused as the file loads", (t) => {
  const dir = tempDir(t, 'inputs-trace');
  writeFileSync(join(dir, 'trace.jsonl'), line(100) + line(5000, 100, 10));
  const prompts = { kind: 'trace', path: 'trace.jsonl', format: 'mooncake' };
  assertRefusedAtLoad(
    experimentOf(dir, { prompts, contextTokens: 4096 }),
    /trace\.jsonl:2: 5000 prompt \+ 100 output tokens exceed the model's context of 4096 tokens/,
  );
  writeFileSync(join(dir, 'trace.jsonl'), line(100) + line(-5, 4, 10));
  assertRefusedAtLoad(experimentOf(dir, { prompts }), /trace\.jsonl:2: field "input_length" must be a positive integer, got -5/);
  writeFileSync(join(dir, 'trace.jsonl'), line(100) + line(100, 4, 10));
  assertRefusedAtLoad(
    experimentOf(dir, { prompts }, { workloads: [{ kind: 'trace', requests: 5 }] }),
    /holds 2 requests, fewer than the 5 workload "trace" asks for/,
  );
});

test('a dataset record without its prompt or over the context, and more accuracy items than records: refused as the file loads', (t) => {
  const dir = tempDir(t, 'inputs-dataset');
  const workloads = [{ kind: 'single-stream', requests: 1 }];
  writeFileSync(join(dir, 'set.jsonl'), '{"prompt": "hi", "max_tokens": 8}\n{"text": "no prompt"}\n');
  assertRefusedAtLoad(experimentOf(dir, { prompts: { kind: 'jsonl', path: 'set.jsonl' } }, { workloads }), /set\.jsonl:2: missing string field "prompt"/);
  writeFileSync(join(dir, 'set.jsonl'), '{"prompt": "hi", "max_tokens": 8}\n{"prompt": "long answer", "max_tokens": 9000}\n');
  assertRefusedAtLoad(
    experimentOf(dir, { prompts: { kind: 'jsonl', path: 'set.jsonl' }, contextTokens: 8192 }, { workloads }),
    /set\.jsonl:2: 0 prompt \+ 9000 output tokens exceed the model's context of 8192 tokens/,
  );
  writeFileSync(join(dir, 'answers.jsonl'), Array.from({ length: 6 }, (_, i) => `{"prompt": "${i}+1?", "answer": "${i + 1}"}\n`).join(''));
  assertRefusedAtLoad(
    experimentOf(dir, {}, { workloads, quality: { accuracy: { path: 'answers.jsonl', scorer: 'last-number', items: 10 } } }),
    /quality\.accuracy\.items asks for 10 records, the file holds 6[^\n]*\n[^\n]*lower quality\.accuracy\.items to 6/,
  );
});
