/**
 * `servelab bisect`'s rounds on the fake machine (support-fake-executor.ts): the real runner, plan, journal, store,
 * search and answer, with figures the machine derives from each server's environment, so the whole search (three
 * rounds, a budget stop and its resume) runs in seconds. The same on simulators, end to end through the CLI:
 * test/bisect-pair.test.ts (a pair that matters only together) and the EAGLE-3 example's bisect step.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadCostModel } from '../src/experiment/plan/budget.js';
import { prepareBisect, runBisect } from '../src/experiment/run/bisect.js';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { formatBisect } from '../src/experiment/text/bisect-format.js';
import { storedBisect } from '../src/report/bisect.js';
import { listBisectRounds } from '../src/store/bisect.js';
import { openStore } from '../src/store/db.js';
import { SIX_NCCL } from './support-bisect.js';
import { tempDir, writeExperiment } from './support-experiment.js';
import { FakeExecutor } from './support-fake-executor.js';

test('six differences of which two matter: both named with their effect and CI, the share, the fix; a budget stop resumes', async (t) => {
  const dir = tempDir(t, 'bisect-rounds');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  // Restoring NCCL_ALGO halves the time per token, NCCL_BUFFSIZE divides it by 1.5; the other four do nothing.
  const executor = new FakeExecutor((call) => ({
    tpotMs: 8 / ((call.spec.env.NCCL_ALGO === 'Ring' ? 2 : 1) * (call.spec.env.NCCL_BUFFSIZE === '8388608' ? 1.5 : 1)),
  }));
  t.after(() => executor.close());
  const common = { name: 'bisect-six', metric: 'tpotMedianMs', trials: 2, schedule: 'blocked', passes: 2, telemetry: { enabled: false } };
  const server = { command: ['fake-server', '--port', '{port}'], readyTimeout: '5m' };
  const tuned = writeExperiment(dir, 'tuned.yaml', { ...common, server: { ...server, env: SIX_NCCL } });
  const untuned = writeExperiment(dir, 'untuned.yaml', { ...common, server });
  const log: string[] = [];
  const options = { executor, workDir: dir, log: (line: string) => log.push(line) };
  assert.equal((await runExperiment({ db, experiment: loadExperiment(tuned), ...options })).status, 'done');
  assert.equal((await runExperiment({ db, experiment: loadExperiment(untuned), acceptEnvChange: true, ...options })).status, 'done');

  const request = {
    db,
    currentRunId: 2,
    trials: 6,
    tolerance: 0.05,
    maxTrials: 40,
    costs: (experiment: Parameters<typeof loadCostModel>[1]) => loadCostModel(db, experiment),
  };
  const prepared = prepareBisect(request, options);
  assert.deepEqual(
    prepared.bisect.setup.differences.map((difference) => difference.name),
    ['NCCL_ALGO', 'NCCL_BUFFSIZE', 'NCCL_MAX_NCHANNELS', 'NCCL_NTHREADS', 'NCCL_P2P_LEVEL', 'NCCL_PROTO'],
  );
  assert.equal(prepared.prediction.round1.trials, 24);
  assert.equal(prepared.prediction.oneAtATime.trials, 48);

  // Round 1 fits 40 trials, round 2 would not: stopped with what it measured.
  const stopped = await runBisect(db, prepared, request, options);
  assert.equal(stopped.status, 'stopped');
  assert.match(stopped.message ?? '', /round 2 needs 24 trials, over --max-trials 40 with 24 spent/);
  assert.equal(stopped.view.answer?.unresolved.length, 2);

  // The same request with a larger budget continues that bisect: rounds 2 and 3.
  const resumedRequest = { ...request, maxTrials: 100 };
  const resumed = prepareBisect(resumedRequest, options);
  assert.equal(resumed.resumed, true);
  assert.equal(resumed.bisect.id, prepared.bisect.id);
  const done = await runBisect(db, resumed, resumedRequest, options);
  assert.equal(done.status, 'done', done.message);
  assert.equal(executor.running, 0, 'servers left running');
  const rounds = listBisectRounds(db, done.bisectId);
  assert.deepEqual(
    rounds.map((round) => round.tests.map((test) => test.members.join('+'))),
    [
      ['NCCL_ALGO+NCCL_BUFFSIZE+NCCL_MAX_NCHANNELS', 'NCCL_NTHREADS+NCCL_P2P_LEVEL+NCCL_PROTO'],
      ['NCCL_ALGO+NCCL_BUFFSIZE', 'NCCL_MAX_NCHANNELS'],
      ['NCCL_ALGO', 'NCCL_BUFFSIZE'],
    ],
  );

  const text = formatBisect(done.bisectId, done.view, resumed.labels);
  assert.match(text, /total change, current vs reference: \+(199|200|201)\.\d% \(CI \+\d+\.\d% … \+\d+\.\d%\): [\d.]+ vs [\d.]+ ms/);
  assert.match(
    text,
    /responsible \(restored alone, vs the current configuration\):\n {2}NCCL_ALGO +\+(99|100|101)\.\d% \(CI [^)]+\)\n {2}NCCL_BUFFSIZE +\+(49|50|51)\.\d% \(CI /,
  );
  assert.match(text, /together (99|100|101)% of the \+(199|200|201)\.\d%/);
  assert.match(text, /cost: 72 trials, [\d.]+ GPU-hours; one at a time .*: 48 trials/);
  assert.match(text, /fix \(the reference values of the responsible settings\):\n {2}export NCCL_ALGO=Ring\n {2}export NCCL_BUFFSIZE=8388608$/);
  // Every round is an ordinary run, and each of them (and the bisected run) shows the answer (show, report, UI).
  assert.equal(storedBisect(db, rounds[2]!.runId)?.text, text);
  assert.equal(storedBisect(db, 2)?.text, text);
});
