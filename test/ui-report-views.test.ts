/**
 * What the report and the dashboard show, checked in headless Chromium against a real UI server and a real store:
 * a small simulator experiment run by the CLI, plus runs of another experiment stored through the runner's own
 * write functions (one stopped, one in flight). Each test is one promise of issue 27 (point 3); screenshots go to
 * /tmp/reportui-*.png for a look at the layout.
 */

import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { parameterChart } from '../src/report/charts.js';
import { setRunStatus, upsertProgress } from '../src/store/runs.js';
import { startUi, type UiServer } from '../src/ui/server.js';
import { buildFixtureRun, type FixtureStore, fixtureStoreAt } from './report-fixture.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { cli, simCommand, writeExperiment } from './support-experiment.js';
import { needs } from './support-services.js';

const SIM_RUN = 1;
const VARIANTS = ['baseline', 'short'];

interface Setup {
  store: FixtureStore;
  ui: UiServer;
  browser: Browser;
  runLog: string;
  show: string;
  stopped: number;
  live: number;
}

/** The plain-text table rows of `servelab show` / `run` (columns two spaces apart). */
const columns = (line: string): string[] => line.trim().split(/\s{2,}/);

/** Every text box of every chart on the page that overlaps another one of its chart: [figure, text, text]. */
async function overlappingTexts(page: Page): Promise<string[]> {
  return page.$$eval('figure svg', (svgs) =>
    svgs.flatMap((svg) => {
      const boxes = [...svg.querySelectorAll('text')]
        .filter((node) => (node.textContent ?? '').trim() !== '')
        .map((node) => ({ text: node.textContent ?? '', box: node.getBoundingClientRect() }));
      const found: string[] = [];
      boxes.forEach((a, i) => {
        for (const b of boxes.slice(i + 1)) {
          const overlap = a.box.left < b.box.right - 1 && b.box.left < a.box.right - 1 && a.box.top < b.box.bottom - 1 && b.box.top < a.box.bottom - 1;
          if (overlap) found.push(`${svg.closest('figure')?.getAttribute('data-figure')}: "${a.text}" × "${b.text}"`);
        }
      });
      return found;
    }),
  );
}

async function openRun(page: Page, ui: UiServer, runId: number): Promise<void> {
  await page.goto(`${ui.url}#run=${runId}`);
  await page.locator('#run-title', { hasText: `run ${runId}` }).waitFor({ timeout: 20_000 });
  await page.locator('#loading').waitFor({ state: 'hidden', timeout: 20_000 });
}

describe('report and dashboard views', { ...needs(NO_BROWSER), timeout: 240_000 }, () => {
  let setup: Setup;

  before(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-ui-views-'));
    const path = join(dir, 'store.db');
    // Trials of a few hundred ms: 2 variants × 2 workloads × 3 blocks.
    const file = writeExperiment(dir, 'views.yaml', {
      name: 'ui-views',
      server: { command: simCommand(), readyTimeout: '5m' },
      workloads: [
        { kind: 'single-stream', requests: 3 },
        { kind: 'sweep', concurrencies: [4], requestsPerLevel: 6 },
      ],
      trials: 3,
      variants: { baseline: {}, short: { client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 12, seed: 3 } } } },
    });
    const run = await cli(['run', file], { store: path, timeoutMs: 180_000 });
    assert.equal(run.code, 0, run.stderr);
    const show = await cli(['show', String(SIM_RUN)], { store: path });
    assert.equal(show.code, 0, show.stderr);
    const store = fixtureStoreAt(dir, path);
    // Another experiment: one run stopped part-way (never finalized), one in flight.
    const stopped = buildFixtureRun(store, { trials: 10, status: 'running' });
    setRunStatus(store.db, stopped, 'interrupted', 'stopped by the test');
    const live = buildFixtureRun(store, { trials: 6, status: 'running' });
    const ui = await startUi({ storePath: path, host: '127.0.0.1', port: 0, pollMs: 200 });
    const browser = await launchBrowser();
    setup = { store, ui, browser, runLog: run.stdout + run.stderr, show: show.stdout, stopped, live };
  });

  after(async () => {
    await setup?.browser.close();
    await setup?.ui.close();
    setup?.store.cleanup();
    assert.deepEqual(problems, []);
  });

  // Script errors of any page, checked once all tests ran.
  const problems: string[] = [];
  const newPage = async (): Promise<Page> => {
    const page = await setup.browser.newPage({ viewport: { width: 1360, height: 1000 } });
    page.on('pageerror', (error) => problems.push(error.message));
    return page;
  };

  test('a chart per workload puts every trial at its run-order number, coloured by variant, blocks marked', async () => {
    const page = await newPage();
    await openRun(page, setup.ui, SIM_RUN);
    const table = await page.$$eval('table.trials tbody tr', (rows) =>
      rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '')),
    );
    assert.equal(table.length, 12);
    for (const [index, workload] of ['single-stream', 'c=4'].entries()) {
      const figure = page.locator(`#figures figure[data-figure="trials-${index}"]`);
      assert.equal(await figure.getAttribute('aria-label'), `Each trial in run order: ${workload}`);
      const svgText = await figure.locator('svg').innerHTML();
      for (const block of ['block 1', 'block 2', 'block 3']) assert.ok(svgText.includes(`>${block}<`), `${workload}: ${block} marked`);
      // Each point's x (viewBox px: plot 64…616 spans trials 0.5…12.5) names a trial; its series names the variant.
      const points = await figure.locator('svg path[ecmeta_ssr_type="chart"]').evaluateAll((paths) =>
        paths.map((path) => ({
          series: Number(path.getAttribute('ecmeta_series_index')),
          x: Number(/matrix\([^,]+,[^,]+,[^,]+,[^,]+,([^,]+),/.exec(path.getAttribute('transform') ?? '')?.[1]),
        })),
      );
      const drawn = points.map((point) => `trial ${Math.round((point.x - 64) / (552 / 12) + 0.5)}/12 ${VARIANTS[point.series]}`).sort();
      const listed = table
        .filter((row) => row[3] === workload)
        .map((row) => `${row[0]} ${row[2]}`)
        .sort();
      assert.deepEqual(drawn, listed, `${workload}: chart points are the table's trials`);
    }
    await page.locator('#figures figure[data-figure="trials-1"]').scrollIntoViewIfNeeded();
    await page.screenshot({ path: '/tmp/reportui-trials-chart.png', fullPage: true });
    assert.deepEqual(await overlappingTexts(page), []);
  });

  test('categorical axes are bars: throughput per workload, acceptance with too few depths for a line', async () => {
    const page = await newPage();
    await openRun(page, setup.ui, SIM_RUN);
    const marks = await page
      .locator('#figures figure[data-figure="throughput"] svg [ecmeta_ssr_type="chart"]')
      .evaluateAll((nodes) => nodes.map((node) => ({ fill: node.getAttribute('fill'), closed: /Z$/.test(node.getAttribute('d') ?? '') })));
    assert.equal(marks.length, 4, '2 variants × 2 workloads');
    assert.ok(
      marks.every((mark) => mark.fill !== 'none' && mark.closed),
      'no line joins single-stream to c=4',
    );
    // One speculative variant: a bar per depth, not a lone dot in an empty plot.
    await page.setContent(
      `<figure>${parameterChart('Acceptance rate vs steps', 'steps', 'acceptance rate', [{ name: 'c=1', points: [[3, 0.62]] }], { yMax: 1 })}</figure>`,
    );
    const bar = await page.locator('svg [ecmeta_ssr_type="chart"]').evaluateAll((nodes) => nodes.map((node) => node.getBoundingClientRect().height));
    assert.equal(bar.length, 1);
    assert.ok(bar[0]! > 100, `the bar is drawn (${bar[0]} px tall)`);
    await page.screenshot({ path: '/tmp/reportui-acceptance-bar.png' });
  });

  test('the CI is a percent change, the same string in `servelab show` and the UI; columns say whose counts they are', async () => {
    const page = await newPage();
    await openRun(page, setup.ui, SIM_RUN);
    const lines = setup.show.split('\n');
    const headerAt = lines.findIndex((line) => line.startsWith('variant') && line.includes('CI of change'));
    assert.ok(headerAt >= 0, setup.show);
    const header = columns(lines[headerAt]!);
    for (const label of ['change', 'CI of change', 'n (base/var)', 'failed req (base/var)', 'invalid trials (base/var)'])
      assert.ok(header.includes(label), label);
    const cli = lines.slice(headerAt + 2, headerAt + 4).map(columns);
    const uiHeader = await page.$$eval('table.verdicts thead th', (cells) => cells.map((cell) => cell.textContent));
    assert.deepEqual(uiHeader.slice(4, 9), [
      'change vs baseline',
      '95% CI of change',
      'p-value',
      'failed requests (this variant)',
      'invalid trials (this variant)',
    ]);
    const ui = await page.$$eval('table.verdicts tbody tr', (rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '')));
    for (const row of cli) {
      const [variant, workload, , , change, ci] = row;
      const match = ui.find((cells) => cells[0] === workload && cells[1] === variant);
      assert.ok(match, `${variant} ${workload} in the UI`);
      assert.equal(match[4], change);
      assert.equal(match[5], ci);
      assert.match(ci!, /^[+−]\d+\.\d% … [+−]\d+\.\d%$/);
    }
    await page.locator('table.verdicts').screenshot({ path: '/tmp/reportui-verdicts.png' });
  });

  test('each verdict badge is coloured by its verdict', async () => {
    const page = await newPage();
    await openRun(page, setup.ui, SIM_RUN);
    const badges = await page.$$eval('table.verdicts tbody td .pill', (pills) => pills.map((pill) => ({ text: pill.textContent, className: pill.className })));
    assert.equal(badges.length, 4);
    for (const badge of badges) {
      const expected = badge.text === 'faster' || badge.text === 'slower' ? badge.text : 'neutral';
      assert.equal(badge.className, `pill ${expected}`, `badge "${badge.text}"`);
    }
  });

  test('trial numbers agree: the runner log, `servelab show` and the UI trial table', async () => {
    const page = await newPage();
    await openRun(page, setup.ui, SIM_RUN);
    const logged = [...setup.runLog.matchAll(/(trial \d+\/12) (\S+) (\S+): /g)].map((match) => `${match[1]} ${match[2]} ${match[3]}`).sort();
    const shown = setup.show
      .split('\n')
      .filter((line) => /^trial \d+\/12\s/.test(line))
      .map(columns)
      .map((cells) => `${cells[0]} ${cells[2]} ${cells[3]}`)
      .sort();
    const ui = (await page.$$eval('table.trials tbody tr', (rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? ''))))
      .map((cells) => `${cells[0]} ${cells[2]} ${cells[3]}`)
      .sort();
    assert.equal(logged.length, 12, setup.runLog);
    assert.deepEqual(shown, logged);
    assert.deepEqual(ui, logged);
    // Blocks count from 1 in both views.
    assert.match(setup.show, /^trial 1\/12\s+block 1\s/m);
    assert.equal(await page.locator('table.trials tbody tr').first().locator('td').nth(1).textContent(), 'block 1');
  });

  test('a stopped run says its verdicts were not finalized, not that they are provisional', async () => {
    const page = await newPage();
    await openRun(page, setup.ui, setup.stopped);
    const text = `${await page.locator('#verdicts').innerText()}\n${await page.locator('#notes').innerText()}`;
    assert.match(text, /the runner did not finalize this interrupted run/);
    assert.doesNotMatch(text, /provisional/i);
    await openRun(page, setup.ui, setup.live);
    assert.match(await page.locator('#verdicts').innerText(), /Verdicts are provisional: computed from 6 of 48 planned trials so far/);
  });

  test('the sidebar and the run card count the same trials done', async () => {
    const page = await newPage();
    for (const runId of [SIM_RUN, setup.stopped, setup.live]) {
      await openRun(page, setup.ui, runId);
      const fact = await page.locator('.fact', { hasText: 'Trials done' }).locator('.value').textContent();
      assert.equal(await page.locator(`nav a[data-run="${runId}"] .trials-done`).textContent(), `run ${runId} · ${fact} done`);
    }
  });

  test('the in-flight panel and its chart show the same progress row; the chart title clears its legend', async () => {
    const page = await newPage();
    const progress = (trialLabel: string, completed: number, tokens: number): void =>
      upsertProgress(setup.store.db, setup.live, { trialLabel, completed, total: 24, outputTokensPerSecond: tokens });
    progress('trial 7/48 baseline c=8', 3, 640.5);
    await openRun(page, setup.ui, setup.live);
    const agree = async (label: string, figures: string): Promise<void> => {
      await page.locator('#progress-rows .progress-figures', { hasText: figures }).waitFor({ timeout: 20_000 });
      assert.deepEqual(await page.locator('#progress-rows .progress-label').allTextContents(), [label]);
      assert.equal(await page.locator('#live-figures figure[data-figure="live-in-flight"]').getAttribute('aria-label'), `Trial in flight: ${label}`);
    };
    await agree('trial 7/48 baseline c=8', '3/24 requests · 640.5 tok/s');
    progress('trial 7/48 baseline c=8', 11, 702.25);
    await agree('trial 7/48 baseline c=8', '11/24 requests · 702.3 tok/s');
    // The sidebar's "done" counts stored trials (6); the trial in flight is the 7th.
    assert.equal(await page.locator(`nav a[data-run="${setup.live}"] .trials-done`).textContent(), `run ${setup.live} · 6/48 done`);
    assert.deepEqual(await overlappingTexts(page), []);
    await page.locator('#live').screenshot({ path: '/tmp/reportui-in-flight.png' });

    // Two lanes measure at the same time: a row and a chart line each, neither overwriting the other.
    const laneProgress = (index: number, name: string, trialLabel: string, completed: number, tokens: number): void =>
      upsertProgress(setup.store.db, setup.live, { lane: { index, name }, trialLabel, completed, total: 24, outputTokensPerSecond: tokens });
    laneProgress(0, 'gpu-a', 'trial 8/48 baseline c=8', 5, 610);
    laneProgress(1, 'gpu-b', 'trial 9/48 candidate c=8', 7, 820);
    await page.locator('#progress-rows .progress-figures', { hasText: '7/24 requests · 820.0 tok/s' }).waitFor({ timeout: 20_000 });
    assert.deepEqual(await page.locator('#progress-rows .progress-label').allTextContents(), [
      'gpu-a: trial 8/48 baseline c=8',
      'gpu-b: trial 9/48 candidate c=8',
    ]);
    assert.deepEqual(await page.locator('#progress-rows .progress-figures').allTextContents(), ['5/24 requests · 610.0 tok/s', '7/24 requests · 820.0 tok/s']);
    assert.equal(await page.locator('#progress-title').textContent(), 'Trials in flight');
    const chart = page.locator('#live-figures figure[data-figure="live-in-flight"]');
    assert.equal(await chart.getAttribute('aria-label'), 'Trials in flight on 2 lanes');
    const legend = await chart.locator('svg').textContent();
    assert.match(legend ?? '', /gpu-a: trial 8\/48 baseline c=8/);
    assert.match(legend ?? '', /gpu-b: trial 9\/48 candidate c=8/);
  });

  test('switching runs shows a loading state until the run is there', async () => {
    const page = await newPage();
    await openRun(page, setup.ui, SIM_RUN);
    let release = (): void => undefined;
    const held = new Promise<void>((done) => (release = done));
    await page.route(/\/api\/runs\/\d+$/, async (route) => {
      await held;
      await route.continue();
    });
    await page.evaluate((hash) => {
      (globalThis as unknown as { location: { hash: string } }).location.hash = hash;
    }, `#run=${setup.stopped}`);
    await page.locator('#loading', { hasText: `Loading run ${setup.stopped}…` }).waitFor({ timeout: 10_000 });
    assert.ok(await page.locator('#run').isHidden(), "the previous run's tables are not left under the new selection");
    await page.screenshot({ path: '/tmp/reportui-loading.png' });
    release();
    await page.locator('#run-title', { hasText: `run ${setup.stopped}` }).waitFor({ timeout: 20_000 });
    assert.ok(await page.locator('#loading').isHidden());
    await page.unroute(/\/api\/runs\/\d+$/);
  });

  test('the diff picker offers only runs of the same experiment, and labels which statistic each run shows', async () => {
    const page = await newPage();
    await openRun(page, setup.ui, SIM_RUN);
    await page.locator('#diff', { hasText: 'No other run of ui-views to compare with' }).waitFor({ timeout: 10_000 });
    assert.ok(await page.locator('#diff-pick').isHidden());
    await openRun(page, setup.ui, setup.stopped);
    const options = await page.locator('#diff-a option').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('value')));
    assert.deepEqual(options.map(Number).sort(), [setup.stopped, setup.live].sort());
    await page.locator('#diff table.drift').waitFor({ timeout: 10_000 });
    const header = await page.$$eval('#diff table.drift thead th', (cells) => cells.map((cell) => cell.textContent));
    assert.deepEqual(header.slice(2, 4), [`run ${setup.stopped}: median`, `run ${setup.live}: mean`]);
    // The server refuses a cross-experiment pair too.
    const refused = await page.evaluate(async (url) => (await fetch(url)).status, `/api/diff?a=${SIM_RUN}&b=${setup.live}`);
    assert.equal(refused, 404);
    await page.locator('#diff').scrollIntoViewIfNeeded();
    await page.screenshot({ path: '/tmp/reportui-diff.png' });
  });
});
