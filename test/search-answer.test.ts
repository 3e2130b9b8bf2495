import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { median } from 'simple-statistics';
import type { SearchSummary } from '../src/experiment/analysis/search-summary.js';
import { campaignSummary } from '../src/experiment/run/campaign-report.js';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { loadConclusion } from '../src/report/queries.js';
import { writeReports } from '../src/report/write.js';
import { openStore } from '../src/store/db.js';
import { getRun } from '../src/store/queries.js';
import { startUi } from '../src/ui/server.js';
import { cli, tempDir } from './support-experiment.js';
import { FakeExecutor, fakeSearchFile } from './support-fake-executor.js';

/**
 * One answer for a search run (issue 35, "one conclusion, told the same everywhere"): the machine drifts faster
 * trial after trial, so a point first measured late has a higher raw median than the leader measured since block 1,
 * though it is slower within every block it shares with it. The strategy's block-adjusted estimate names the true
 * best; a ranking of raw medians would name the late point. Every view (run's final text, show, show --json, ls,
 * ls --json, the Markdown and HTML report, the UI, export) must state the search's best and no other "best".
 */
describe('a search run has one answer in every view', { timeout: 120_000 }, () => {
  test('raw medians and the block-adjusted leader disagree; every view names the leader', async (t) => {
    const dir = tempDir(t, 'search-answer');
    const store = join(dir, 'servelab.db');
    const file = fakeSearchFile(dir, { name: 'x{x}', knobs: { x: { min: 1, max: 8 } }, args: ['--x', '{x}'], tolerance: '2%' }, { name: 'search-answer' });
    const db = openStore(store);
    t.after(() => db.close());
    // x=4 is best; every step away costs 4%; the machine gets 2% faster with each trial (a warming box, a throttle lifting).
    const executor = new FakeExecutor((call) => ({ tpotMs: 5 * Math.exp(0.04 * Math.abs(Number(call.arg('--x')) - 4) - 0.02 * call.bench) }));
    const result = await runExperiment({ db, experiment: loadExperiment(file), executor, workDir: dir });
    await executor.close();
    assert.equal(result.status, 'done', result.message);

    const run = getRun(db, 1)!;
    const conclusion = loadConclusion(db, run, { ranking: true });
    const summary = conclusion.search!;
    assert.ok(summary, 'a search run concludes with its search');
    assert.equal(conclusion.best, undefined, 'no ranking by raw medians beside the search');
    const best = summary.leaders.find((leader) => leader.level === 'single-stream')!.best;
    const across = summary.leaders.find((leader) => leader.level === '*')!.best;
    assert.equal(best, 'x4', 'the block-adjusted leader is the true best');
    assert.equal(across, best);
    // The disagreement this test is about: by raw medians another point would rank first.
    const values = new Map<string, number[]>();
    for (const trial of db.prepare('SELECT variant, metrics_json FROM trials').all() as Array<{ variant: string; metrics_json: string }>)
      values.set(trial.variant, [...(values.get(trial.variant) ?? []), JSON.parse(trial.metrics_json).outputTokensPerSecond as number]);
    const [rawTop] = [...values].map(([variant, list]) => ({ variant, median: median(list) })).sort((a, b) => b.median - a.median);
    assert.notEqual(rawTop!.variant, best, `raw medians rank ${rawTop!.variant} first`);
    const raw = rawTop!.variant;

    /** A view's text names the search's best and never calls another config best or first. */
    const namesOneBest = (view: string, text: string): void => {
      assert.match(text, new RegExp(`best config (?:so far )?across levels: ${best}\\b`), `${view}: the answer`);
      assert.doesNotMatch(text, /best config: (?:maximize|minimize)|ranks first|is the best config/, `${view}: no second ranking`);
      assert.doesNotMatch(text, new RegExp(`(?:best[^\\n]*|single-stream): ${raw}\\b`), `${view}: ${raw} named best`);
    };

    // The command-line views at once (each a process start of its own).
    const [shown, json, listed, listedText, exported] = await Promise.all(
      [['show', '1'], ['show', '1', '--json'], ['ls', '--json'], ['ls'], ['export', '1', '--format', 'csv']].map((args) => cli(args, { store })),
    );
    // run's final text (cli/commands/run.ts prints this summary of the same conclusion) and show.
    const runText = campaignSummary(db, 1, conclusion);
    namesOneBest('run', runText);
    // The run's text ends with its answer: the best across levels with its tolerance, then each level's best.
    const last = runText.trimEnd().split('\n').slice(-3);
    assert.match(
      last[0]!,
      new RegExp(`^best config across levels: ${best}, within 2% of the best \\(95% confidence\\) of 8 points, \\d+ measured in \\d+ blocks?$`),
    );
    assert.match(last[1]!, /^best per level \(each within 2% of that level's best\):$/);
    assert.match(last[2]!, new RegExp(`^ {2}single-stream: ${best} `));
    assert.equal(shown!.code, 0, shown!.stderr);
    namesOneBest('show', shown!.stdout);
    assert.match(shown!.stdout, new RegExp(`^ {2}single-stream: ${best} `, 'm'));

    const parsed = JSON.parse(json!.stdout) as { search: SearchSummary; best?: unknown };
    assert.equal(parsed.best, undefined, 'show --json: no ranking');
    assert.deepEqual(
      parsed.search.leaders.map((leader) => leader.best),
      [best, best],
    );

    assert.match(listedText!.stdout, new RegExp(`best config (?:so far )?across levels: ${best}\\b`), 'ls');
    const listedJson = JSON.parse(listed!.stdout) as Array<{ search: Omit<SearchSummary, 'heatmaps'> }>;
    assert.deepEqual(
      listedJson[0]!.search.leaders.map((leader) => leader.best),
      [best, best],
    );

    const [written] = writeReports(db, [1], join(dir, 'report'));
    namesOneBest('Markdown report', readFileSync(written!.markdown, 'utf8'));
    const html = readFileSync(written!.html, 'utf8');
    namesOneBest('HTML report', html);
    assert.doesNotMatch(html, /<h2>Best config<\/h2>|class="data ranking"/);
    assert.match(html, new RegExp(`<tr><td>single-stream</td><td><code>${best}</code>`));

    const ui = await startUi({ storePath: store, port: 0, host: '127.0.0.1' });
    try {
      const view = (await (await fetch(`${ui.url}api/runs/1`)).json()) as { html: Record<string, string> };
      assert.equal(view.html.best, '', 'UI: no best-config ranking');
      namesOneBest('UI', view.html.search!);
    } finally {
      await ui.close();
    }

    assert.equal(exported!.code, 0, exported!.stderr);
    const [header, ...rows] = exported!.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(','));
    const [variantAt, bestAt] = [header!.indexOf('variant'), header!.indexOf('conclusion.searchBestAt')];
    assert.ok(bestAt >= 0, 'export: the search answer column');
    const named = new Set(rows.filter((row) => row[bestAt] !== '').map((row) => `${row[variantAt]} ${row[bestAt]}`));
    assert.deepEqual([...named], [`${best} single-stream *`]);
  });

  test('a budget spent past its end says why: checked between blocks, the last block ran whole; plan says so before', async (t) => {
    const dir = tempDir(t, 'search-budget-overrun');
    const store = join(dir, 'servelab.db');
    const file = fakeSearchFile(
      dir,
      { name: 'x{x}', knobs: { x: { min: 1, max: 8 } }, args: ['--x', '{x}'], tolerance: '2%', budget: { wallTime: '1s' } },
      // A profile with a typical startup of minutes: the grid's prediction must use the starts this run measured.
      { name: 'search-budget-overrun', profile: 'vllm' },
    );
    const db = openStore(store);
    t.after(() => db.close());
    // Each trial takes 400 ms of wall time: block 1's 4 points take 1.6 s of a 1 s budget, left to run whole.
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const executor = new FakeExecutor(() => {
      Atomics.wait(pause, 0, 0, 400);
      return { tpotMs: 5 };
    });
    const result = await runExperiment({ db, experiment: loadExperiment(file), executor, workDir: dir });
    await executor.close();
    assert.equal(result.status, 'done', result.message);
    const summary = loadConclusion(db, getRun(db, 1)!, { ranking: false }).search!;
    assert.match(summary.done!.reason, /^budget spent \([\d.]+ s of a 1\.0 s budget\) before the search was decided$/);
    const [shown, planned] = await Promise.all([cli(['show', '1'], { store }), cli(['plan', file], { store })]);
    assert.match(
      shown.stdout,
      /^budget: [\d.]+ s of GPU time spent of a 1\.0 s budget \(\d+%\): the budget is checked between blocks, and the last block, started at 0\.0 s, ran whole$/m,
    );
    // The points it never started cost what its measured starts did (1 ms on the fake machine), not vLLM's typical minutes.
    assert.match(shown.stdout, /^GPU-hours: .* vs [\d.]+ predicted for the full interleaved grid \([\d.]+ s, \d+ trials/m);
    assert.match(
      planned.stdout,
      /plus at most one block, up to .+ \(the budget is checked between blocks, and a block started before it runs out runs whole\)/,
    );
  });
});
