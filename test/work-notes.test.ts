import assert from 'node:assert/strict';
import { test } from 'node:test';
import { workNotes } from '../src/experiment/analysis/work-notes.js';
import type { TrialMetrics, TrialRecord } from '../src/store/types.js';

const base: TrialMetrics = {
  outputTokensPerSecond: 100,
  requestsPerSecond: 1,
  perStreamTokensPerSecond: 100,
  ttftMedianMs: 10,
  ttftP99Ms: 20,
  tpotMedianMs: 5,
  itlP99Ms: 9,
  e2eMedianMs: 200,
  completed: 40,
  failed: 0,
};

function trial(variant: string, metrics: Partial<TrialMetrics>): TrialRecord {
  return {
    id: 1,
    runId: 1,
    variant,
    serverKey: 'k',
    workload: 'c=4',
    params: {},
    block: 0,
    repetition: 0,
    startedAt: '',
    finishedAt: '',
    metrics: { ...base, ...metrics },
  } as TrialRecord;
}

test('work notes name unequal work, disagreeing token counts, resends and a server behind its rate, per variant', () => {
  const short = { outputLength: { requestedMean: 40, generatedMean: 16, shortRequests: 40 } };
  const notes = workNotes([
    trial('baseline', {}),
    trial('baseline', {}),
    trial('fast', short),
    trial('fast', short),
    trial('fast', { tokenCounts: { method: 'stream-chunks', checked: 40, disagreeing: 40 }, resends: 3 }),
    trial('open', { rate: { offeredPerSecond: 20, servedPerSecond: 5.85, queuedByCap: 50, maxLagMs: 4000 } }),
  ]);
  assert.deepEqual(notes, [
    'fast c=4: early-stop: 16.0 of 40.0 tokens per request in 2 of 3 trials (80 requests stopped short; unequal work)',
    'fast c=4: token counts disagreed in 40 requests over 1 of 3 trials; figures use stream-chunks',
    'fast c=4: 3 requests resent after a kept-alive connection closed, over 3 trials',
    'open c=4: offered 20.0 req/s, served 5.85 req/s in 1 of 1 trials: the server fell behind (latency counts from each scheduled arrival)',
  ]);
  assert.deepEqual(workNotes([trial('baseline', { tokenCounts: { method: 'server-usage', checked: 40, disagreeing: 0 } })]), []);
});
