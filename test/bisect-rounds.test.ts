/**
 * `servelab bisect`'s rounds on the fake machine (support-fake-executor.ts): the real runner, plan, journal, store,
 * search and answer, with figures the machine derives from each server's environment, so the whole search (a screening round, a budget stop and its resume) runs in seconds. The same on simulators, end to end through the CLI:
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
import { bisectReportParts, storedBisect } from '../src/report/bisect.js';
import { listBisectRounds } from '../src/store/bisect.js';
import { type Db, openStore } from '../src/store/db.js';
import { listTrials } from '../src/store/queries.js';
import { startUi } from '../src/ui/server.js';
import { SIX_NCCL } from './support-bisect.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { tempDir, writeExperiment } from './support-experiment.js';
import { FakeExecutor } from './support-fake-executor.js';

test('six differences of which two matter: both named with their effect and CI, the share, fewer trials than one at a time, the fix; a budget stop resumes', async (t) => {
  const dir = tempDir(t, 'bisect-rounds');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  // Restoring NCCL_ALGO halves the time per token, NCCL_BUFFSIZE divides it by 1.5; the other four do nothing.
  const executor = new FakeExecutor((call) => ({
    tpotMs: 8 / ((call.spec.env.NCCL_ALGO === 'Ring' ? 2 : 1) * (call.spec.env.NCCL_BUFFSIZE === '8388608' ? 1.5 : 1)),
  }));
  t.after(() => executor.close());
  const common = { name: 'bisect-six', metric: 'tpotMedianMs', trials: 2, schedule: 'blocked', passes: 2, telemetry: { enabled: false } };
  const log: string[] = [];
  const options = await storeTunedThenUntuned(dir, db, executor, common, (line) => log.push(line));

  const request = {
    db,
    currentRunId: 2,
    trials: 6,
    tolerance: 0.05,
    maxTrials: 20,
    costs: (experiment: Parameters<typeof loadCostModel>[1]) => loadCostModel(db, experiment),
  };
  const prepared = prepareBisect(request, options);
  assert.deepEqual(
    prepared.bisect.setup.differences.map((difference) => difference.name),
    ['NCCL_ALGO', 'NCCL_BUFFSIZE', 'NCCL_MAX_NCHANNELS', 'NCCL_NTHREADS', 'NCCL_P2P_LEVEL', 'NCCL_PROTO'],
  );
  // Six settings: one screening design of 16 configurations × 2 trials, vs 8 configurations × 6 one at a time.
  assert.equal(prepared.prediction.configurations, 16);
  assert.equal(prepared.prediction.round1.trials, 32);
  assert.equal(prepared.prediction.oneAtATime.trials, 48);

  // Round 1 does not fit 20 trials: stopped before measuring anything.
  const stopped = await runBisect(db, prepared, request, options);
  assert.equal(stopped.status, 'stopped');
  assert.match(stopped.message ?? '', /round 1 needs 32 trials, over --max-trials 20 with 0 spent/);

  // The same request with a larger budget continues that bisect.
  const resumedRequest = { ...request, maxTrials: 100 };
  const resumed = prepareBisect(resumedRequest, options);
  assert.equal(resumed.resumed, true);
  assert.equal(resumed.bisect.id, prepared.bisect.id);
  const done = await runBisect(db, resumed, resumedRequest, options);
  assert.equal(done.status, 'done', done.message);
  assert.equal(executor.running, 0, 'servers left running');
  const rounds = listBisectRounds(db, done.bisectId, []);
  assert.deepEqual(
    rounds.map((round) => round.configs.length),
    [16],
  );

  const text = formatBisect(done.bisectId, done.view, resumed.labels);
  assert.match(
    text,
    /total change, current vs reference \(all effects and interactions\): \+(19[5-9]|20[0-5])\.\d% \(CI \+\d+\.\d% … \+\d+\.\d%\); medians [\d.]+ vs [\d.]+ ms/,
  );
  assert.match(
    text,
    /responsible \(each restored alone, the others as now\):\n {2}NCCL_ALGO +\+(9[89]|10[0-2])\.\d% \(CI [^)]+\)\n {2}NCCL_BUFFSIZE +\+(4[89]|5[0-2])\.\d% \(CI /,
  );
  assert.match(
    text,
    /share explained \(the named effects over the total, log scale\): (99|100|101)% \(CI (9\d|1\d\d)% … (9\d|1\d\d)%\) of the \+(19[5-9]|20[0-5])\.\d%/,
  );
  assert.match(text, /cost: 32 trials, \d+ server starts, [\d.]+ GPU-hours\n/);
  assert.match(
    text,
    /one at a time \(6 \+ 2 configurations, .*\): 6 trials per arm: 48 trials, [\d.]+ GPU-hours \(16 fewer here\); for each effect as precise as here \(16 per arm\): 128 trials, [\d.]+ GPU-hours \(96 fewer here\)/,
  );
  assert.doesNotMatch(text, /over 100%/);
  assert.match(text, /fix \(the reference values of the responsible settings\):\n {2}export NCCL_ALGO=Ring\n {2}export NCCL_BUFFSIZE=8388608$/);
  // Every round is an ordinary run, and each of them (and the bisected run) shows the answer (show, report, UI).
  assert.equal(storedBisect(db, rounds[0]!.runId)?.text, text);
  assert.equal(storedBisect(db, 2)?.text, text);
  const report = bisectReportParts(db, 2);
  assert.ok(report.html.includes('export NCCL_ALGO=Ring') && report.markdown.includes('share explained'));

  // The dashboard's run view, in a browser: the answer beside the bisected run.
  if (NO_BROWSER) return;
  const ui = await startUi({ storePath: join(dir, 'servelab.db'), host: '127.0.0.1', port: 0 });
  t.after(() => ui.close());
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${ui.url}#run=2`);
  const shown = page.locator('#bisect');
  await shown.locator('pre', { hasText: 'share explained' }).waitFor({ timeout: 20_000 });
  const ui2 = await shown.innerText();
  for (const line of ['NCCL_ALGO', 'NCCL_BUFFSIZE', 'share explained', '48 trials', 'export NCCL_BUFFSIZE=8388608']) assert.ok(ui2.includes(line), line);
});

test('with lanes: each lane measures whole blocks of the design, the slower lane shifts its own level only', async (t) => {
  const dir = tempDir(t, 'bisect-lanes');
  const db = openStore(join(dir, 'servelab.db'));
  t.after(() => db.close());
  // The second lane is 30% slower at every configuration: the fit's level per lane and block takes it.
  const executor = new FakeExecutor((call) => ({
    tpotMs: (8 * (call.spec.env.LANE === '1' ? 1.3 : 1)) / ((call.spec.env.NCCL_PROTO === 'LL' ? 1.6 : 1) * (call.spec.env.NCCL_ALGO === 'Ring' ? 1.2 : 1)),
  }));
  t.after(() => executor.close());
  const common = {
    name: 'bisect-lanes',
    metric: 'tpotMedianMs',
    trials: 2,
    schedule: 'blocked',
    passes: 2,
    telemetry: { enabled: false },
    lanes: [{ env: { LANE: '0' } }, { env: { LANE: '1' } }],
  };
  const options = await storeTunedThenUntuned(dir, db, executor, common, () => {});
  const request = {
    db,
    currentRunId: 2,
    trials: 6,
    tolerance: 0.05,
    costs: (experiment: Parameters<typeof loadCostModel>[1]) => loadCostModel(db, experiment),
  };
  const prepared = prepareBisect(request, options);
  assert.equal(prepared.bisect.setup.differences.length, 6);
  const done = await runBisect(db, prepared, request, options);
  assert.equal(done.status, 'done', done.message);
  const round = listBisectRounds(db, done.bisectId, [])[0]!;
  const trials = listTrials(db, round.runId);
  assert.deepEqual(new Set(trials.map((trial) => trial.lane)), new Set([0, 1]), 'both lanes measured');
  for (const lane of [0, 1]) {
    assert.equal(new Set(trials.filter((trial) => trial.lane === lane).map((trial) => trial.variant)).size, 16, `lane ${lane} measured the whole design`);
  }
  const answer = done.view.answer!;
  assert.deepEqual(
    answer.responsible.map((effect) => effect.members[0]),
    ['NCCL_PROTO', 'NCCL_ALGO'],
  );
  assert.ok(Math.abs(answer.responsible[0]!.change - 0.6) < 0.02, String(answer.responsible[0]!.change));
  assert.ok(Math.abs(answer.responsible[1]!.change - 0.2) < 0.02, String(answer.responsible[1]!.change));
});

/** Runs 1 and 2 of `db`: the fake server with the six NCCL settings, then without them (what bisect compares). */
async function storeTunedThenUntuned(dir: string, db: Db, executor: FakeExecutor, common: Record<string, unknown>, log: (line: string) => void) {
  const server = { command: ['fake-server', '--port', '{port}'], readyTimeout: '5m' };
  const tuned = writeExperiment(dir, 'tuned.yaml', { ...common, server: { ...server, env: SIX_NCCL } });
  const untuned = writeExperiment(dir, 'untuned.yaml', { ...common, server });
  const options = { executor, workDir: dir, log };
  assert.equal((await runExperiment({ db, experiment: loadExperiment(tuned), ...options })).status, 'done');
  assert.equal((await runExperiment({ db, experiment: loadExperiment(untuned), acceptEnvChange: true, ...options })).status, 'done');
  return options;
}
