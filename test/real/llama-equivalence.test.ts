/**
 * Opt-in, against a real llama.cpp llama-server with a draft model (see ../shared/real-engine/README.md):
 *   SERVELAB_LLAMA_SERVER=… SERVELAB_LLAMA_MODEL=target.gguf SERVELAB_LLAMA_DRAFT=draft.gguf \
 *   [SERVELAB_LLAMA_DRAFT_BAD=draft-bad.gguf] npm run test:real
 * quality.equivalence on a real engine: draft-model speculation verifies every token with the target, so at
 * temperature 0 its answers may part from plain decoding only by numerics (another batch shape for the verify
 * pass), never by a different model. Each speculative variant must not be "outputs changed"; the A/A floor (the
 * baseline on a second start and at concurrency N) is measured and printed with the figures.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cli, tempDir, writeExperiment } from '../support-experiment.js';
import { LLAMA_DRAFT, LLAMA_DRAFT_BAD, LLAMA_MODEL, LLAMA_SERVER, llamaSkip, speculate } from './support-llama.js';

const skip = llamaSkip(true);

describe('real llama-server: output equivalence', { timeout: 600_000 }, () => {
  test('draft-model speculation at temperature 0 is not "outputs changed"; the A/A floor is measured', { skip }, async (t) => {
    const dir = tempDir(t, 'llama-equivalence');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'equivalence.yaml', {
      name: 'llama-equivalence',
      profile: 'llamacpp',
      server: { command: [LLAMA_SERVER!, '-m', LLAMA_MODEL!, '--host', '127.0.0.1', '--port', '{port}', '-ngl', '99', '-np', '4'], readyTimeout: '5m' },
      client: { prompts: { kind: 'synthetic', inputTokens: 32, outputTokens: 64, seed: 3 }, warmupRequests: 1 },
      workloads: [{ kind: 'single-stream', requests: 4 }],
      trials: 2,
      variants: {
        baseline: {},
        'spec-draft': { args: speculate(LLAMA_DRAFT!) },
        ...(LLAMA_DRAFT_BAD && { 'spec-draft-bad': { args: speculate(LLAMA_DRAFT_BAD) } }),
      },
      quality: { equivalence: { prompts: 16, outputTokens: 200 } },
    });
    const run = await cli(['run', file], { store, timeoutMs: 540_000 });
    assert.equal(run.code, 0, run.stderr);
    const shown = await cli(['show', '1', '--json'], { store });
    assert.equal(shown.code, 0, shown.stderr);
    const { equivalence } = JSON.parse(shown.stdout) as {
      equivalence: {
        floor?: { identicalShare: number; tokenAgreement: number; earliestDivergence?: number; comparisons: string[] };
        variants: Array<{ variant: string; status?: string; match?: Record<string, unknown> }>;
      };
    };
    t.diagnostic(`A/A floor: ${JSON.stringify(equivalence.floor)}`);
    for (const entry of equivalence.variants) t.diagnostic(`${entry.variant}: ${entry.status} ${JSON.stringify(entry.match)}`);
    assert.ok(equivalence.floor, 'the baseline was compared with itself');
    for (const entry of equivalence.variants) {
      assert.ok(entry.status, `${entry.variant} was compared`);
      assert.notEqual(entry.status, 'outputs changed', `${entry.variant}: ${JSON.stringify(entry.match)}`);
    }
  });
});
