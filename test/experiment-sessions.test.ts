/**
 * Shaped workloads through `servelab run` with `client.cache: cold` on one caching simulator: a trial's salt opens
 * every prompt (shared prefixes and conversations included), so hits within a trial are expected and none cross
 * trials; every trial stays valid and `show` lists the designed vs achieved hit rate and the TTFT by turn.
 */

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { openStore } from '../src/store/db.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

test('servelab run, cache cold: shared prefixes hit their designed rate in every trial, sessions hit their history', async (t) => {
  const dir = tempDir(t, 'sessions-run');
  const store = join(dir, 'servelab.db');
  const file = writeExperiment(dir, 'shaped.yaml', {
    name: 'shaped',
    server: { command: simCommand({ tpotMs: 1, extra: ['--prefix-cache', '--prefill-ms-per-token', '0.5', '--jitter', '0'] }), readyTimeout: '5m' },
    client: { prompts: { kind: 'shared-prefix', prefixes: 2, prefixTokens: 256, questionsPerPrefix: 4, questionTokens: 16, outputTokens: 4 }, cache: 'cold' },
    workloads: [{ kind: 'concurrency', concurrency: 2, requests: 8 }],
    trials: 2,
    // One server config: every trial meets the same cache, so only the salt keeps trials apart.
    variants: { docs: {}, chat: { client: { prompts: { kind: 'sessions', turns: 3, inputTokens: 64, outputTokens: 8 } } } },
  });
  const result = await cli(['run', file], { store, timeoutMs: 120_000 });
  assert.equal(result.code, 0, result.stderr);
  const db = openStore(store, { readonly: true });
  t.after(() => db.close());
  const trials = (db.prepare('SELECT variant, metrics_json FROM trials ORDER BY id').all() as Array<{ variant: string; metrics_json: string }>).map((row) => ({
    ...row,
    metrics: JSON.parse(row.metrics_json) as { prefixCacheHitRate: number; prefixCacheTargetHitRate: number; ttftMedianByTurnMs?: number[] },
  }));
  assert.equal(trials.length, 4);
  assert.equal((db.prepare('SELECT count(*) AS n FROM invalid_trials').get() as { n: number }).n, 0, 'no trial invalid');
  for (const { variant, metrics } of trials) {
    t.diagnostic(`${variant}: hit ${metrics.prefixCacheHitRate.toFixed(3)}, target ${metrics.prefixCacheTargetHitRate.toFixed(3)}`);
    assert.ok(Math.abs(metrics.prefixCacheHitRate - metrics.prefixCacheTargetHitRate) < 0.06, `${variant}: no more than its own reuse`);
  }
  assert.deepEqual(
    trials.filter((trial) => trial.variant === 'chat').map((trial) => trial.metrics.ttftMedianByTurnMs?.length),
    [3, 3],
  );
  const show = await cli(['show', '1'], { store });
  assert.match(show.stdout, /docs c=2: prefix cache hit \d+% of prompt tokens, target \d+% \(mean over 2 of 2 trials\)/);
  assert.match(show.stdout, /chat c=2: TTFT p50 by turn 1: [\d.]+ ms, 2: [\d.]+ ms, 3: [\d.]+ ms \(mean over 2 of 2 trials\)/);
});
