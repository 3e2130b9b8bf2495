import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { speculativeSchedule } from '../src/experiment/analysis/spec-schedule.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import type { StoredSearchStep } from '../src/store/search.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

/**
 * A search with two load levels writes each level's best speculative depth as the engine's schedule file
 * (experiment/analysis/spec-schedule.ts cites the engine sources): vLLM's `num_speculative_tokens_per_batch_size`
 * from a real simulator search answering as vLLM, SGLang's per-batch-size adaptive config from stored decisions.
 */
describe('engine schedule of a search', () => {
  test("a vLLM search at single-stream and c=16: run, show and report name the schedule, the file holds each level's best K", async (t) => {
    const dir = tempDir(t, 'search-schedule');
    const store = join(dir, 'store.db');
    // The verify step's cost grows with batch × draft tokens: deep drafts pay alone, less so at c=16.
    const file = writeExperiment(dir, 'search.yaml', {
      name: 'search-schedule',
      profile: 'vllm',
      variants: {},
      server: {
        command: simCommand({
          tpotMs: 4,
          loadMs: 50,
          extra: ['--engine', 'vllm', '--spec-acceptance', '0.8', '--spec-draft-overhead', '0.02', '--spec-verify-batch-cost', '0.02'],
        }),
        readyTimeout: '5m',
      },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 32, seed: 3 }, warmup: { requests: 1 } },
      workloads: [
        { kind: 'single-stream', requests: 3 },
        { kind: 'concurrency', concurrency: 16, requests: 32 },
      ],
      objective: { maximize: 'outputTokensPerSecond' },
      search: {
        name: 'k{k}',
        // The simulator's --spec-draft-tokens is vLLM's num_speculative_tokens (K).
        knobs: { k: [1, 3, 6] },
        args: ['--spec-draft-tokens', '{k}'],
        tolerance: '5%',
        budget: { wallTime: '2m' },
      },
    });
    const run = await cli(['run', file], { store, timeoutMs: 300_000 });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const named =
      /^engine schedule \(vLLM num_speculative_tokens_per_batch_size\): \[\[1,4,(\d)\],\[5,16,(\d)\]\] from each level's best: single-stream → \1 \(k\1\), c=16 → \2 \(k\2\)$/m;
    const [, single, c16] = run.stdout.match(named) ?? assert.fail(run.stdout);
    assert.match(run.stdout, /`servelab report 1` writes it as run-1\.vllm-speculative-config\.json; vLLM: `--speculative-config/);
    assert.match((await cli(['show', '1'], { store })).stdout, named);

    // The file holds what the stored decisions say each level's best is.
    const shown = JSON.parse((await cli(['show', '1', '--json'], { store })).stdout) as { searchSteps: StoredSearchStep[] };
    const leaders = shown.searchSteps.at(-1)!.leaders;
    const bestOf = (level: string): string => {
      const leader = leaders.find((entry) => entry.level === level)!;
      return leader.preferred ?? leader.point;
    };
    assert.equal(bestOf('single-stream'), `k=${single}`);
    assert.equal(bestOf('c=16'), `k=${c16}`);
    const out = join(dir, 'report');
    const report = await cli(['report', '1', '--out', out], { store });
    assert.equal(report.code, 0, report.stderr);
    const path = join(out, 'run-1.vllm-speculative-config.json');
    assert.match(report.stdout, /run-1\.vllm-speculative-config\.json/);
    assert.deepEqual(JSON.parse(readFileSync(path, 'utf8')), {
      num_speculative_tokens: Math.max(Number(single), Number(c16)),
      num_speculative_tokens_per_batch_size: [
        [1, 4, Number(single)],
        [5, 16, Number(c16)],
      ],
    });
  });

  test("SGLang: one slot per level's lowest batch size with its best steps; none with a topk above 1", (t) => {
    const dir = tempDir(t, 'search-schedule-sglang');
    const experiment = (topk: number[]) =>
      loadExperiment(
        writeExperiment(dir, `sglang-${topk.join('-')}.yaml`, {
          profile: 'sglang',
          variants: {},
          workloads: [
            { kind: 'single-stream', requests: 2 },
            { kind: 'concurrency', concurrency: 8, requests: 8 },
            { kind: 'concurrency', concurrency: 32, requests: 32 },
          ],
          search: {
            name: 's{steps}-k{topk}',
            knobs: { steps: [1, 3, 5], topk },
            args: ['--speculative-num-steps', '{steps}', '--speculative-eagle-topk', '{topk}'],
          },
        }),
      );
    const step = (leaders: Array<[string, string]>): StoredSearchStep[] => [
      { block: 0, spentSeconds: 0, createdAt: '', measure: [], drop: [], leaders: leaders.map(([level, point]) => ({ level, point, value: 1 })) },
    ];
    const chain = speculativeSchedule(
      experiment([1]),
      step([
        ['single-stream', 'steps=5,topk=1'],
        ['c=8', 'steps=3,topk=1'],
        ['c=32', 'steps=1,topk=1'],
        ['*', 'steps=3,topk=1'],
      ]),
    );
    assert.ok(chain && 'schedule' in chain, JSON.stringify(chain));
    // Slots from batch 1, 3 (past the geometric middle of 1 and 8) and 17 (past that of 8 and 32).
    assert.deepEqual(chain.schedule.content, { 1: { candidate_steps: [5] }, 3: { candidate_steps: [3] }, 17: { candidate_steps: [1] } });
    const tree = speculativeSchedule(
      experiment([1, 4]),
      step([
        ['single-stream', 'steps=5,topk=4'],
        ['c=8', 'steps=1,topk=1'],
      ]),
    );
    assert.deepEqual(tree, { none: "SGLang's adaptive speculative config runs with --speculative-eagle-topk 1 only, and a level's best has 4" });
  });
});
