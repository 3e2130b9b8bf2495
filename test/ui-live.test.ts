import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { openStore } from '../src/store/db.js';
import { listTrials } from '../src/store/queries.js';
import { liveFigures } from '../src/ui/live.js';
import { startUi } from '../src/ui/server.js';
import { buildFixtureRun, createFixtureStore } from './report-fixture.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { needs } from './support-services.js';

const SERVELAB = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const artifacts = resolve('test-artifacts');

/** One simulator server (both variants differ only client-side) that takes a few seconds to load, so "starting" is visible. */
function writeExperiment(dir: string): string {
  const path = join(dir, 'live.yaml');
  writeFileSync(
    path,
    stringify({
      name: 'ui-live',
      profile: 'simulator',
      server: {
        command: ['node', '{servelab}', 'simulate', '--port', '{port}', '--load-ms', '4000', '--tpot-ms', '3', '--ttft-ms', '5', '--jitter', '0.02'],
        readyTimeout: '5m',
      },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 32, seed: 3 }, warmupRequests: 1 },
      workloads: [{ kind: 'sweep', concurrencies: [1, 4], requestsPerLevel: 6 }],
      trials: 3,
      seed: 5,
      variants: { baseline: {}, short: { client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 16, seed: 3 } } } },
    }),
  );
  return path;
}

async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // not there yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 100));
  }
}

test('servelab ui follows a live experiment: server phase to ready, log tail, charts, verdicts', { ...needs(NO_BROWSER), timeout: 90_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-ui-live-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const store = join(dir, 'store.db');
  // Create the store first so the UI and the browser are up before the runner starts: the page must see the
  // server while it is still starting, however slow the machine is to launch Chromium.
  openStore(store).close();
  const ui = await startUi({ storePath: store, host: '127.0.0.1', port: 0 });
  t.after(() => ui.close());
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1360, height: 1000 } });
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  await page.goto(ui.url);
  await page.locator('#empty', { hasText: 'No runs yet' }).waitFor({ timeout: 10_000 });
  // Every text the progress line ever shows, to check that warm-up counts never pass as the trial's.
  await page.locator('#progress-rows').evaluate((node) => {
    // The test's tsconfig has no DOM globals; the page's window is typed just enough here.
    type Window = { progressTexts: string[]; MutationObserver: new (callback: () => void) => { observe(target: unknown, options: object): void } };
    type Rows = { querySelectorAll(selector: string): Iterable<{ textContent: string | null }> };
    const view = node.ownerDocument.defaultView as unknown as Window;
    view.progressTexts = [];
    const record = (): void => {
      for (const figures of (node as unknown as Rows).querySelectorAll('.progress-figures')) view.progressTexts.push(figures.textContent ?? '');
    };
    new view.MutationObserver(record).observe(node, { childList: true, characterData: true, subtree: true });
  });

  const runner = spawn(process.execPath, [SERVELAB, 'run', writeExperiment(dir), '--store', store], { stdio: ['ignore', 'ignore', 'pipe'] });
  let runnerLog = '';
  runner.stderr.setEncoding('utf8').on('data', (chunk: string) => (runnerLog += chunk));
  const runnerExit = new Promise<number | null>((done) => runner.on('close', (code) => done(code)));
  t.after(async () => {
    if (runner.exitCode === null) runner.kill('SIGKILL');
    await runnerExit;
  });

  // The run appears, its server is visible while starting, then the same row turns ready: all pushed over SSE.
  await page.locator('#servers .pill.starting').waitFor({ timeout: 20_000 });
  const startingPhase = await page.locator('#servers td.phase').first().innerText();
  assert.ok(startingPhase.length > 0);
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: join(artifacts, 'ui-starting.png') });
  await page.locator('#servers .pill.ready').waitFor({ timeout: 30_000 });
  assert.match(await page.locator('#log').innerText(), /simulator listening on http:\/\/127\.0\.0\.1/);
  await page.locator('#live-figures figure svg').first().waitFor({ timeout: 30_000 });
  // One live chart per workload (c=1 and c=4 differ in scale), never one line across both.
  await page.locator('#live-figures figure[data-figure="live-throughput-1"]').waitFor({ timeout: 30_000 });
  const liveTitles = await page.locator('#live-figures figure').evaluateAll((nodes) => nodes.map((node) => node.getAttribute('aria-label')));
  assert.ok(
    liveTitles.some((title) => /^Throughput per trial: .*c=1/.test(title ?? '')) &&
      liveTitles.some((title) => /^Throughput per trial: .*c=4/.test(title ?? '')),
    liveTitles.join(' | '),
  );
  await page.locator('#figures figure[data-figure="throughput"] svg').waitFor({ timeout: 30_000 });
  await page.screenshot({ path: join(artifacts, 'ui-live.png') });

  assert.equal(await runnerExit, 0, runnerLog);
  const progressTexts = await page
    .locator('#progress-rows')
    .evaluate((node) => (node.ownerDocument.defaultView as unknown as { progressTexts: string[] }).progressTexts);
  assert.ok(progressTexts.length > 0, 'the progress line was shown');
  // Each trial measures 6 requests per level after 1 warm-up request: "1/1" would be the warm-up's count.
  for (const text of progressTexts) assert.match(text, /^(warming up|\d+\/6 requests · \d+\.\d tok\/s)$/);
  await page.locator('#run-status.done').waitFor({ timeout: 20_000 });
  // 2 workloads x (baseline + short), with a CI for the candidate rows.
  await until('the final verdict table', async () => ((await page.locator('#verdicts table.verdicts tbody tr').count()) === 4 ? true : undefined), 10_000);
  assert.match(await page.locator('#verdicts').innerText(), /[+−]\d+\.\d% … [+−]\d+\.\d%/);
  const bars = await page.$$eval(
    '#figures figure[data-figure="speedup"] path',
    (paths) => paths.filter((path) => path.getBoundingClientRect().height > 0).length,
  );
  assert.ok(bars >= 2, `speedup chart draws ${bars} marks`);
  assert.ok(await page.locator('#live').isHidden(), 'live section is hidden once the run is done');
  await page.screenshot({ path: join(artifacts, 'ui-done.png'), fullPage: true });
  assert.deepEqual(problems, []);
});

test('live figures: one throughput and TTFT chart per workload; the in-flight line shows the current trial only', () => {
  const store = createFixtureStore();
  try {
    const runId = buildFixtureRun(store, { trials: 12 });
    const trials = listTrials(store.db, runId);
    const workloads = [...new Set(trials.map((trial) => trial.workload))];
    assert.ok(workloads.length >= 2, `fixture has several workloads: ${workloads.join(', ')}`);
    const startedAt = trials[0]!.startedAt;
    const at = Date.parse(trials.at(-1)!.finishedAt);
    const point = (atMs: number, trialLabel: string, outputTokensPerSecond: number) => ({
      atMs,
      progress: { runId, trialLabel, completed: 1, total: 10, outputTokensPerSecond, updatedAt: new Date(atMs).toISOString() },
    });
    const inFlight = [
      point(at + 100, 'trial 13/36 baseline c=1', 80),
      point(at + 200, 'trial 14/36 eagle3-s2 c=32, warming up', 0),
      point(at + 300, 'trial 14/36 eagle3-s2 c=32', 900),
      point(at + 400, 'trial 14/36 eagle3-s2 c=32', 950),
    ];
    const figures = liveFigures(startedAt, trials, inFlight);
    const ids = figures.map((figure) => figure.id);
    assert.deepEqual(ids, [...workloads.flatMap((_, index) => [`live-throughput-${index}`, `live-ttft-${index}`]), 'live-in-flight']);
    workloads.forEach((workload, index) => assert.ok(figures[2 * index]!.title.endsWith(workload)));
    const inFlightFigure = figures.at(-1)!;
    assert.equal(inFlightFigure.title, 'Trial in flight: trial 14/36 eagle3-s2 c=32');
    assert.doesNotMatch(inFlightFigure.svg, /baseline c=1/, 'the previous trial is not on the in-flight chart');
  } finally {
    store.cleanup();
  }
});
