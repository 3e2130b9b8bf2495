import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { answerLeader, type SearchRaceCell, type SearchSummary } from '../src/experiment/analysis/search-summary.js';
import { runExperiment } from '../src/experiment/run/runner.js';
import { searchStep } from '../src/experiment/search/strategy.js';
import type { RaceFigures } from '../src/experiment/search/types.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { writeReports } from '../src/report/write.js';
import { openStore } from '../src/store/db.js';
import { startUi } from '../src/ui/server.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';
import { FakeExecutor, fakeSearchFile } from './support-fake-executor.js';
import { needs } from './support-services.js';

/**
 * Every view of a search run (issue 35, item 4): the summary every view renders from one model, the response surface
 * as a heatmap over the two knobs that matter most per level (Markdown and HTML report, the UI), and no rows of the
 * points the search never measured (show, the reports' verdict and speculative-decoding tables). A search of 3 knobs
 * on the fake machine (the real runner, store and strategy): depth and width move the response, `extra` barely.
 */
interface ShowJson {
  search: SearchSummary;
  conclusion: { baseline?: string; verdicts: unknown[] };
  run: { verdicts?: unknown };
  searchSteps: Array<{ block: number; drop: Array<{ point: string; reason: string; status?: string; races?: RaceFigures[] }> }>;
}

describe('search views', { timeout: 240_000 }, () => {
  let dir: string;
  let store: string;
  let unmeasured: string[];
  let summary: SearchSummary;
  let shownJson: ShowJson;
  let file: string;
  after(() => rmSync(dir, { recursive: true, force: true }));

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'servelab-search-views-'));
    store = join(dir, 'servelab.db');
    file = fakeSearchFile(
      dir,
      {
        name: 'd{depth}-w{width}-e{extra}',
        knobs: { depth: { min: 1, max: 8 }, width: [1, 2, 4], extra: [0, 1] },
        args: ['--depth', '{depth}', '--width', '{width}', '--extra', '{extra}'],
        // Width 1 reaches depth 3 at most: the cells (depth 4–8, width 1) hold no valid point.
        constraints: ['depth <= width * 3'],
        tolerance: '2%',
      },
      {
        name: 'search-views',
        workloads: [
          { kind: 'single-stream', requests: 3 },
          { kind: 'concurrency', concurrency: 4, requests: 4 },
        ],
      },
    );
    const db = openStore(store);
    const executor = new FakeExecutor((call) => ({
      tpotMs:
        5 + 0.08 * (Number(call.arg('--depth')) - 4) ** 2 + 0.4 * Math.abs(Math.log2(Number(call.arg('--width'))) - 1) + 0.005 * Number(call.arg('--extra')),
    }));
    const result = await runExperiment({ db, experiment: loadExperiment(file), executor, workDir: dir });
    await executor.close();
    assert.equal(result.status, 'done', result.message);
    // A stored run of a speculative engine: its trials carry acceptance, so every view draws its spec table.
    db.prepare("UPDATE trials SET metrics_json = json_set(metrics_json, '$.acceptanceRate', 0.7)").run();
    const measured = new Set((db.prepare('SELECT DISTINCT variant FROM trials').all() as Array<{ variant: string }>).map((row) => row.variant));
    db.close();
    const shown = await cli(['show', '1', '--json'], { store });
    assert.equal(shown.code, 0, shown.stderr);
    shownJson = JSON.parse(shown.stdout) as ShowJson;
    summary = shownJson.search;
    const all: string[] = [];
    for (let depth = 1; depth <= 8; depth++)
      for (const width of [1, 2, 4]) for (const extra of [0, 1]) if (depth <= width * 3) all.push(`d${depth}-w${width}-e${extra}`);
    unmeasured = all.filter((name) => !measured.has(name));
    assert.ok(unmeasured.length > 0 && measured.size > 0, `${measured.size} measured of ${all.length}`);
  });

  test('show --json: the summary as an object, a heatmap per level over the two knobs that matter, the third folded in', () => {
    assert.equal(summary.points, 34);
    assert.equal(summary.combinations, 48);
    assert.ok(summary.measured < summary.points && summary.measured > 0);
    assert.ok(summary.done, 'the search ended');
    assert.deepEqual(
      summary.leaders.map((leader) => leader.level),
      ['single-stream', 'c=4', '*'],
    );
    assert.equal(summary.heatmaps.length, 2);
    for (const map of summary.heatmaps) {
      assert.deepEqual([map.x.knob, map.y?.knob, map.others], ['depth', 'width', ['extra']]);
      assert.equal(map.cells.length, 8 * 3);
      const cell = (depth: number, width: number) => map.cells.find((entry) => entry.x === depth - 1 && entry.y === [1, 2, 4].indexOf(width))!;
      for (let depth = 4; depth <= 8; depth++) assert.equal(cell(depth, 1).state, 'invalid', `depth ${depth}, width 1`);
      assert.ok(map.cells.some((entry) => entry.state === 'unmeasured'));
      // The level's stated best carries the one ★; every other mark is a decision of the search at this level.
      const best = map.cells.filter((entry) => entry.mark === 'best');
      assert.equal(best.length, 1, map.level);
      assert.equal(best[0]!.variant, summary.leaders.find((leader) => leader.level === map.level)!.best);
      // A cell shows its best measured point over `extra`.
      for (const entry of map.cells.filter((candidate) => candidate.state === 'measured' && candidate.mark === undefined))
        assert.ok(entry.measuredPoints >= 1 && entry.value! > 0 && entry.variant !== undefined);
    }
  });

  test('a search has no baseline: no verdicts in show --json, and one row per measured point as the stored steps decided it', () => {
    // The space's first point, which the file loader makes the nominal baseline, is not the answer.
    assert.notEqual(answerLeader(summary)!.best, 'd1-w1-e0');
    assert.equal(shownJson.conclusion.baseline, undefined);
    assert.deepEqual(shownJson.conclusion.verdicts, []);
    assert.equal(shownJson.run.verdicts, undefined);
    assert.equal(summary.table.length, summary.measured);
    assert.equal(summary.table[0]!.variant, answerLeader(summary)!.best, 'the answer first');
    const nameOf = (key: string): string => {
      const knobs = Object.fromEntries(key.split(',').map((pair) => pair.split('=')));
      return `d${knobs.depth}-w${knobs.width}-e${knobs.extra}`;
    };
    const rowOf = (key: string) => summary.table.find((row) => row.variant === nameOf(key))!;
    const drops = shownJson.searchSteps.flatMap((step) => step.drop.map((drop) => ({ ...drop, after: step.block - 1 })));
    assert.ok(drops.length > 0, 'the search dropped points');
    for (const drop of drops) {
      const row = rowOf(drop.point);
      assert.equal(row.decidedAfterBlock, drop.after, drop.point);
      assert.equal(row.reason, drop.reason);
      if (row.status !== 'best') assert.equal(row.status, drop.status, drop.point);
      // Each race's figures are the stored data (the leader by variant name), the same numbers the reason words.
      assert.deepEqual(
        drop.races?.map((race) => race.level),
        ['single-stream', 'c=4', '*'],
        `${drop.point}: a figure per race`,
      );
      const races = row.races.map((cell) =>
        cell.status === 'best' ? { ...cell, status: drop.races!.find((race) => race.level === cell.level)!.status } : cell,
      );
      assert.deepEqual(
        races,
        drop.races!.map((race) => ({ ...race, ...(race.versus !== undefined && { versus: nameOf(race.versus) }) })),
        drop.point,
      );
      for (const race of drop.races!) {
        const level = race.level === '*' ? '\\*' : race.level;
        assert.match(
          drop.reason,
          new RegExp(`${level}: [+−]${Math.abs(race.estimate! * 100).toFixed(1)}% vs ${race.versus} `),
          `${drop.point} at ${race.level}`,
        );
        if (race.status === 'as good') assert.ok(race.lower! > -0.02);
        if (race.status === 'out') assert.ok(race.upper! < -0.02);
      }
    }
    for (const leader of summary.leaders) {
      const row = summary.table.find((entry) => entry.variant === leader.best)!;
      assert.equal(row.status, 'best');
      assert.equal(row.races.find((cell) => cell.level === leader.level)?.status, 'best');
    }
    // No heatmap cell of a point the search judged not better or out carries a mark.
    for (const map of summary.heatmaps)
      for (const cell of map.cells.filter((entry) => entry.mark === 'as good')) {
        const race = summary.table.find((row) => row.variant === cell.variant)!.races.find((entry) => entry.level === map.level);
        assert.equal(race?.status, 'as good', `${cell.variant} at ${map.level}`);
      }
    const dropped = new Set(drops.filter((drop) => drop.status !== 'as good').map((drop) => nameOf(drop.point)));
    const bests = new Set(summary.leaders.flatMap((leader) => [leader.best, leader.variant]));
    for (const map of summary.heatmaps)
      for (const cell of map.cells) if (cell.variant && dropped.has(cell.variant) && !bests.has(cell.variant)) assert.equal(cell.mark, undefined, cell.variant);
  });

  test('steps stored before the figures were data: the table reads them from the reasons, as the data gives them', async () => {
    const copy = join(dir, 'old-format.db');
    copyFileSync(store, copy);
    const db = openStore(copy);
    for (const row of db.prepare('SELECT id, step_json FROM search_steps').all() as Array<{ id: number; step_json: string }>) {
      const step = JSON.parse(row.step_json) as { drop: Array<{ races?: unknown }> };
      for (const entry of step.drop) delete entry.races;
      db.prepare('UPDATE search_steps SET step_json = ? WHERE id = ?').run(JSON.stringify(step), row.id);
    }
    db.close();
    const shown = await cli(['show', '1', '--json'], { store: copy });
    assert.equal(shown.code, 0, shown.stderr);
    const old = (JSON.parse(shown.stdout) as ShowJson).search;
    // The reasons word each figure to 0.1% (points tied at that precision may sort either way); a race's status read
    // back from them is the stored one.
    const rounded = (cell: SearchRaceCell) => ({
      ...cell,
      ...(cell.estimate !== undefined && {
        estimate: Math.round(cell.estimate * 1000),
        lower: Math.round(cell.lower! * 1000),
        upper: Math.round(cell.upper! * 1000),
      }),
    });
    const rows = (table: SearchSummary['table']) =>
      table.map((row) => ({ variant: row.variant, status: row.status, races: row.races.map(rounded) })).sort((a, b) => a.variant.localeCompare(b.variant));
    assert.deepEqual(rows(old.table), rows(summary.table));
  });

  test('a search the budget ended: the undecided point "ended unresolved" with its open race, the answer "so far"', async () => {
    // The stored steps as a budget-ended search of an older store leaves them: one point not dropped but named in the
    // unresolved lines only, its figures in their words.
    const copy = join(dir, 'unresolved.db');
    copyFileSync(store, copy);
    const db = openStore(copy);
    const rows = db.prepare('SELECT id, step_json FROM search_steps ORDER BY block').all() as Array<{ id: number; step_json: string }>;
    const steps = rows.map((row) => ({ id: row.id, step: JSON.parse(row.step_json) as { drop: Array<{ point: string; reason: string }>; done?: unknown } }));
    const dropping = steps.find((entry) => entry.step.drop.length > 0)!;
    const open = dropping.step.drop.shift()!;
    const race = open.reason.replace(/^[a-z ]+: /, '').split('; ')[0]!;
    steps.at(-1)!.step.done = {
      reason: 'budget spent (1 min of a 1 min budget) before the search was decided',
      resolved: false,
      unresolved: [`${open.point} may still beat a leader by more than 2%: ${race}`],
    };
    for (const entry of [dropping, steps.at(-1)!]) db.prepare('UPDATE search_steps SET step_json = ? WHERE id = ?').run(JSON.stringify(entry.step), entry.id);
    db.close();
    const shown = await cli(['show', '1'], { store: copy });
    assert.equal(shown.code, 0, shown.stderr);
    const knobs = Object.fromEntries(open.point.split(',').map((pair) => pair.split('=')));
    const name = `d${knobs.depth}-w${knobs.width}-e${knobs.extra}`;
    const level = race.slice(0, race.indexOf(': '));
    assert.match(shown.stdout, new RegExp(`^${name} +ended unresolved +.*racing: [+−][\\d.]+% `, 'm'), `${name} open at ${level}`);
    assert.match(shown.stdout, /^\S+ +best so far \(the answer, not resolved\)/m);
    assert.match(shown.stdout, /never measured when the search ended\)$/m);
    assert.match(shown.stdout, /^\d+ points? out or settled; \d+ still racing when it ended$/m);
  });

  test('a budget-ended run stores the figures of each open point in every race: out at one level, still racing at the other', async (t) => {
    const budgetDir = tempDir(t, 'search-views-open');
    const budgetStore = join(budgetDir, 'servelab.db');
    const budgetFile = fakeSearchFile(
      budgetDir,
      { name: 'x{x}', knobs: { x: { min: 1, max: 8 } }, args: ['--x', '{x}'], tolerance: '2%', budget: { wallTime: '1s' } },
      {
        name: 'search-views-open',
        workloads: [
          { kind: 'single-stream', requests: 3 },
          { kind: 'concurrency', concurrency: 4, requests: 4 },
        ],
      },
    );
    const db = openStore(budgetStore);
    t.after(() => db.close());
    // Block 1 (4 points × 2 levels × 150 ms) outlasts the 1 s budget, so the search ends after it. Every point is
    // alike at one request at a time; at c=4 the largest x is 1.5× faster than the rest, which are out there.
    const pause = new Int32Array(new SharedArrayBuffer(4));
    let largest = 0;
    const executor = new FakeExecutor((call) => {
      Atomics.wait(pause, 0, 0, 150);
      const x = Number(call.arg('--x'));
      largest = Math.max(largest, x);
      return { tpotMs: call.options.workload.kind === 'concurrency' && x < largest ? 7.5 : 5 };
    });
    const result = await runExperiment({ db, experiment: loadExperiment(budgetFile), executor, workDir: budgetDir });
    await executor.close();
    assert.equal(result.status, 'done', result.message);
    const shown = await cli(['show', '1', '--json'], { store: budgetStore });
    assert.equal(shown.code, 0, shown.stderr);
    const { search } = JSON.parse(shown.stdout) as ShowJson;
    assert.equal(search.done?.resolved, false, search.done?.reason);
    assert.deepEqual(Object.keys(search.done!), ['reason', 'resolved', 'unresolved'], 'the figures are in the table, by variant');
    const open = search.table.filter((row) => row.status === 'unresolved');
    assert.ok(open.length > 0, 'points left undecided');
    const leaderAtC4 = search.leaders.find((leader) => leader.level === 'c=4')!.variant;
    const mixed = open.find((row) => row.races.find((cell) => cell.level === 'c=4')?.status === 'out');
    assert.ok(mixed, `an undecided point out at c=4: ${JSON.stringify(open.map((row) => row.races))}`);
    const [single, c4] = [mixed.races.find((cell) => cell.level === 'single-stream')!, mixed.races.find((cell) => cell.level === 'c=4')!];
    assert.equal(single.status, 'racing');
    assert.ok(single.upper! >= 0.02 && single.blocks === 1, JSON.stringify(single));
    assert.ok(c4.upper! < -0.02 && c4.versus === leaderAtC4, JSON.stringify(c4));
    // The prose names only the race it is open in; the table shows both, from the data.
    assert.doesNotMatch(mixed.reason!, /c=4: /);
    const text = await cli(['show', '1'], { store: budgetStore });
    assert.match(text.stdout, new RegExp(`^${mixed.variant} +ended unresolved +racing: [+−][\\d.]+% .*out: −[\\d.]+% `, 'm'));
  });

  test('export: each trial row carries the row of its point in the per-point table, status and figures per race', async () => {
    const [jsonl, csv] = await Promise.all([cli(['export', '1', '--format', 'jsonl'], { store }), cli(['export', '1', '--format', 'csv'], { store })]);
    assert.equal(jsonl.code, 0, jsonl.stderr);
    const rows = jsonl.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, string | number | null>);
    assert.ok(rows.length > 0);
    const races = ['single-stream', 'c=4', '*'];
    for (const row of rows) {
      const point = summary.table.find((entry) => entry.variant === row.variant)!;
      assert.equal(row['conclusion.searchStatus'], point.status, String(row.variant));
      assert.equal(row['conclusion.searchDecidedAfterBlock'], point.decidedAfterBlock ?? null);
      // Existing columns stay.
      assert.ok('conclusion.searchBestAt' in row && 'outputTokensPerSecond' in row && row['param.depth'] !== undefined);
      for (const level of races) {
        const cell = point.races.find((entry) => entry.level === level);
        const figures = ['status', 'versus', 'estimate', 'lower', 'upper', 'blocks'].map((field) => row[`conclusion.searchRace.${level}.${field}`]);
        assert.deepEqual(
          figures,
          [cell?.status, cell?.versus, cell?.estimate, cell?.lower, cell?.upper, cell?.blocks].map((value) => value ?? null),
          `${row.variant} at ${level}`,
        );
      }
    }
    // A dropped point's figures: every race, from the data.
    assert.ok(rows.some((row) => row['conclusion.searchStatus'] === 'out' && typeof row['conclusion.searchRace.*.estimate'] === 'number'));
    assert.equal(csv.code, 0, csv.stderr);
    const header = csv.stdout.slice(0, csv.stdout.indexOf('\n')).split(',');
    for (const column of ['conclusion.searchBestAt', 'conclusion.searchStatus', 'conclusion.searchRace.c=4.estimate', 'conclusion.searchRace.*.upper'])
      assert.ok(header.includes(column), column);
  });

  test('a point raced on for the tie-break alone, when the budget ends: its line says so, with its figures', () => {
    // x=1, preferred, is estimated 1.5% behind x=2 within bounds too wide to show it as good (strategy.ts tieBreakWants).
    const space = { knobs: [{ name: 'x', values: [1, 2, 3], numeric: true, log: false }], points: [{ x: 1 }, { x: 2 }, { x: 3 }] };
    const noise = [0.01, -0.012, 0.008, -0.006, 0.011];
    const observations = noise.flatMap((shift, block) => [
      { point: 'x=1', level: 'c=1', block, value: 98.5 * (1 + shift) },
      { point: 'x=2', level: 'c=1', block, value: 100 * (1 - noise[(block + 2) % noise.length]!) },
      { point: 'x=3', level: 'c=1', block, value: 80 },
    ]);
    const step = searchStep(
      space,
      { direction: 'maximize', tolerance: 0.02, confidence: 0.95, levels: ['c=1'], seed: 1, budget: 10, tieBreak: (a, b) => Number(a.x) - Number(b.x) },
      { observations, spent: 20, dropped: new Map() },
    );
    assert.equal(step.done?.resolved, false);
    const [line] = step.done!.unresolved;
    // It was "x=1 may still beat a leader by more than 2%: " with nothing after it.
    assert.match(
      line!,
      /^x=1, preferred by the tie-break, was not yet shown within 2% of a leader: c=1: −[\d.]+% vs x=2 \(97\.5% bounds −[\d.]+%…\+[\d.]+%, 5 blocks\); \*: /,
    );
    assert.deepEqual(
      step.done!.open!.map((entry) => [entry.point, entry.races.map((race) => race.status)]),
      [['x=1', ['not better', 'not better']]],
    );
  });

  test('plan: the design in numbers, and what it predicts without a budget', async () => {
    const planned = await cli(['plan', file], { store: join(dir, 'plan.db') });
    assert.equal(planned.code, 0, planned.stderr);
    // √34 ≈ 6 points spread over the space first (strategy.ts firstBlockSize), then blocks of up to 12.
    assert.match(planned.stdout, /^design: block 1 measures 6 points spread over the space \(maximin\), then up to 12 points a block/m);
    assert.match(planned.stdout, /^predicted: block 1 alone: .*; then until the leader is within the tolerance of the best \(no budget: no upper bound\)$/m);
  });

  test('show: the summary with its budget line, the measured points only', async () => {
    const shown = await cli(['show', '1'], { store });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, new RegExp(`^plan: \\d+ trials = ${summary.measured} measured points \\(of 34 in the search's space\\)`, 'm'));
    assert.match(shown.stdout, /^budget: [^\n]+ of GPU time spent, no limit$/m);
    assert.match(shown.stdout, /^best per level/m);
    assert.match(shown.stdout, /^speculative decoding/m);
    // Resolved: the points still in play are the leaders, nothing races.
    assert.match(shown.stdout, /^\d+ points? out or settled; \d+ kept as leaders \(nothing left racing\)$/m);
    // No second story beside the answer: the search's decisions per point, no baseline, no verdicts against one.
    assert.doesNotMatch(shown.stdout, /verdicts vs baseline|\(baseline\)|baseline: /);
    assert.match(shown.stdout, /^search decisions per point \(the answer first\):$/m);
    for (const row of summary.table)
      assert.match(shown.stdout, new RegExp(`^${row.variant} +(best|leader|as good|not better|out|still racing|ended unresolved)`, 'm'));
    assert.match(shown.stdout, new RegExp(`^\\(${summary.points - summary.measured} of 34 points never measured`, 'm'));
    for (const name of unmeasured) assert.doesNotMatch(shown.stdout, new RegExp(`\\b${name}\\b`), `${name} is never measured`);
  });

  test('report: the search summary and a heatmap per level, in HTML and Markdown; no rows of unmeasured points', () => {
    const db = openStore(store);
    const [written] = writeReports(db, [1], join(dir, 'report'));
    db.close();
    const html = readFileSync(written!.html, 'utf8');
    const markdown = readFileSync(written!.markdown, 'utf8');
    assert.match(html, /<h2>Search<\/h2><div class="card search"/);
    assert.match(html, /<th>points in the space<\/th><td>34 of 48 combinations/);
    assert.match(html, /data-figure="search-0"[^>]*><svg/);
    assert.match(html, /data-figure="search-1"[^>]*><svg/);
    assert.match(html, /each cell shows one point over the other knobs \(extra\): the one the search marked, else the highest median/);
    for (const text of [html, markdown]) assert.doesNotMatch(text, /Verdicts|Baseline|baseline:|vs baseline|differs from the baseline/);
    assert.equal((html.match(/<tr data-status="/g) ?? []).length, summary.measured);
    assert.match(html, new RegExp(`<tr data-status="best"><td><code>${answerLeader(summary)!.best}</code></td><td>best \\(the answer\\)</td>`));
    assert.match(markdown, /^### Decisions per point$/m);
    assert.match(markdown, /^## Search$/m);
    assert.match(markdown, /^### single-stream$/m);
    assert.match(markdown, /^\| width ↓ depth → \| 1 \| 2 \| 3 \| 4 \| 5 \| 6 \| 7 \| 8 \|$/m);
    // Width 1: depth 1–3 valid (measured or not), 4–8 break the constraint.
    assert.match(markdown, /^\| 1 \|(?: (?:(?:★ |◆ |≈ )?[\d,.]+|·) \|){3}(?: × \|){5}$/m);
    assert.match(markdown, /★ [\d,.]+/);
    for (const name of unmeasured) {
      assert.doesNotMatch(html, new RegExp(`\\b${name}\\b`), `${name} is never measured (HTML)`);
      assert.doesNotMatch(markdown, new RegExp(`\\b${name}\\b`), `${name} is never measured (Markdown)`);
    }
  });

  test('the dashboard shows the search summary and its heatmaps', { ...needs(NO_BROWSER) }, async () => {
    const ui = await startUi({ storePath: store, port: 0, host: '127.0.0.1' });
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(`${ui.url}#run=1`);
      const search = page.locator('#search');
      await search.locator('.card.search').waitFor({ timeout: 20_000 });
      assert.match((await search.locator('table.search-facts').textContent()) ?? '', /points in the space34 of 48 combinations/);
      const leaders = await search.locator('table.search-leaders tbody tr').allTextContents();
      assert.deepEqual(
        leaders.map((row) => row.split(/d\d/)[0]),
        ['single-stream', 'c=4', 'across levels'],
      );
      for (const index of [0, 1]) assert.ok(await search.locator(`figure[data-figure="search-${index}"] svg`).isVisible());
      assert.match((await search.locator('figure[data-figure="search-0"] svg').textContent()) ?? '', /★/);
      // The decisions per point in place of verdicts against the space's first point.
      assert.equal(await search.locator('table.search-points tbody tr').count(), summary.measured);
      assert.equal((await page.locator('#verdicts').innerHTML()).trim(), '');
      assert.doesNotMatch(await page.locator('main').innerText(), /Baseline|vs baseline/);
      await page.screenshot({ path: '/tmp/search-views-ui.png', fullPage: true });
    } finally {
      await browser.close();
      await ui.close();
    }
  });
});

test('plan: one point at every level is a start and its trials, whatever repetitions the grid it is priced from has', async (t) => {
  // A blocked grid of 5 repetitions keeps a server across each block boundary (36 starts for 40 point-repetitions):
  // priced as the grid's time over its point-repetitions, a point read 8% cheaper than with 1 repetition.
  const dir = tempDir(t, 'search-plan-point');
  const figures = await Promise.all(
    [1, 5].map(async (trials) => {
      const file = writeExperiment(dir, `reps-${trials}.yaml`, {
        name: 'point-price',
        variants: {},
        server: { command: simCommand({ tpotMs: 4, loadMs: 3000 }), readyTimeout: '5m' },
        client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 32, seed: 3 } },
        workloads: [
          { kind: 'single-stream', requests: 3 },
          { kind: 'concurrency', concurrency: 4, requests: 8 },
        ],
        trials,
        objective: { maximize: 'outputTokensPerSecond' },
        search: { name: 'd{draft}', knobs: { draft: { min: 0, max: 7 } }, args: ['--spec-draft-tokens', '{draft}'], tolerance: '2%' },
      });
      const planned = await cli(['plan', file], { store: join(dir, `plan-${trials}.db`) });
      assert.equal(planned.code, 0, planned.stderr);
      return /^one point at every level: (\S+ \S+) \(a start and 2 trials\); the full interleaved grid: .*\((\d+) trials, (\d+) starts\)/m.exec(planned.stdout);
    }),
  );
  const [one, five] = figures;
  assert.ok(one && five, 'both plans price a point');
  assert.deepEqual([five[2], five[3]], ['80', '36'], 'the 5-repetition grid shares starts across block boundaries');
  assert.equal(five[1], one[1]);
});
