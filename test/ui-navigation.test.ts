/**
 * Dashboard navigation against a real store and headless Chromium: which run it opens on, how experiments are
 * grouped, which pair of runs the fingerprint diff starts with, and which server's log is shown.
 */

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { insertServer, setRunStatus, updateServer } from '../src/store/runs.js';
import { startUi } from '../src/ui/server.js';
import { buildFixtureRun, createFixtureStore } from './report-fixture.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { needs } from './support-services.js';

test('ui opens on the live run, else the newest; groups runs by experiment name; diffs against the previous run of that experiment', {
  ...needs(NO_BROWSER),
  timeout: 60_000,
}, async (t) => {
  const store = createFixtureStore();
  t.after(() => store.cleanup());
  // Run 1: "sweep" from a file that has since moved, so the store holds two experiment rows named "sweep".
  const first = buildFixtureRun(store, { name: 'sweep' });
  store.db.prepare("UPDATE experiments SET file_path = '/old/place/sweep.yaml' WHERE name = 'sweep'").run();
  const live = buildFixtureRun(store, { name: 'sweep', trials: 2, status: 'running' });
  const newest = buildFixtureRun(store, { name: 'other' });
  assert.equal((store.db.prepare("SELECT count(*) AS n FROM experiments WHERE name = 'sweep'").get() as { n: number }).n, 2);

  const ui = await startUi({ storePath: store.path, host: '127.0.0.1', port: 0, pollMs: 200 });
  t.after(() => ui.close());
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(error.message));

  await page.goto(ui.url);
  await page.locator('#run-title', { hasText: `sweep · run ${live}` }).waitFor({ timeout: 15_000 });
  assert.equal(new URL(page.url()).hash, `#run=${live}`, 'opens on the running run although a newer one exists');

  // One heading per name, newest group first; both "sweep" runs under it, newest first.
  assert.deepEqual(await page.locator('nav h3').allInnerTexts(), ['OTHER', 'SWEEP']);
  const sweepRuns = await page.locator('nav a[data-run]').evaluateAll((links) => links.map((link) => Number(link.getAttribute('data-run'))));
  assert.deepEqual(sweepRuns, [newest, live, first]);

  // Default diff: the previous run of the same experiment → the run shown.
  assert.equal(await page.locator('#diff-a').inputValue(), String(first));
  assert.equal(await page.locator('#diff-b').inputValue(), String(live));

  // Once no run is live, a fresh visit opens on the newest run; with no other run of its own experiment, there
  // is nothing to diff (runs of another experiment are not offered).
  setRunStatus(store.db, live, 'interrupted');
  await page.goto(ui.url);
  await page.reload();
  await page.locator('#run-title', { hasText: `other · run ${newest}` }).waitFor({ timeout: 15_000 });
  await page.locator('#diff', { hasText: 'No other run of other to compare with' }).waitFor({ timeout: 10_000 });
  assert.ok(await page.locator('#diff-pick').isHidden());

  // A pair the user picks stays through later refreshes.
  await page.goto(`${ui.url}#run=${live}`);
  await page.locator('#run-title', { hasText: `sweep · run ${live}` }).waitFor({ timeout: 15_000 });
  await page.locator('#diff-a').selectOption(String(live));
  await page.locator('#diff-b').selectOption(String(first));
  setRunStatus(store.db, newest, 'failed', 'a later change to the store');
  await page.locator(`nav a[data-run="${newest}"] .pill`, { hasText: 'failed' }).waitFor({ timeout: 10_000 });
  assert.equal(await page.locator('#diff-a').inputValue(), String(live));
  assert.equal(await page.locator('#diff-b').inputValue(), String(first));
  assert.deepEqual(problems, []);
});

test('the log pane follows the server in use until the user picks one', { ...needs(NO_BROWSER), timeout: 60_000 }, async (t) => {
  const store = createFixtureStore();
  t.after(() => store.cleanup());
  const runId = buildFixtureRun(store, { trials: 2, status: 'running' });
  const logOf = (name: string): string => {
    const path = join(store.dir, `${name}.log`);
    writeFileSync(path, `INFO ${name} serving\n`);
    return path;
  };
  const server = (name: string): number =>
    insertServer(store.db, { runId, runnerPid: process.pid, serverKey: name, label: name, host: 'local', logPath: logOf(name) });
  const first = server('first-server');
  updateServer(store.db, first, { status: 'ready' });

  const ui = await startUi({ storePath: store.path, host: '127.0.0.1', port: 0, pollMs: 200 });
  t.after(() => ui.close());
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(ui.url);
  await page.locator('#log', { hasText: 'first-server serving' }).waitFor({ timeout: 15_000 });

  // The runner stops the first config's server and starts the next: the pane moves with it.
  updateServer(store.db, first, { status: 'stopped' });
  const second = server('second-server');
  await page.locator('#log', { hasText: 'second-server serving' }).waitFor({ timeout: 15_000 });

  // A server the user clicked stays in the pane while another one starts.
  await page.locator(`#servers tr[data-server="${first}"]`).click();
  await page.locator('#log', { hasText: 'first-server serving' }).waitFor({ timeout: 10_000 });
  updateServer(store.db, second, { status: 'stopped' });
  server('third-server');
  await page.locator('#servers code', { hasText: 'third-server' }).waitFor({ timeout: 15_000 });
  assert.match((await page.locator('#log').textContent()) ?? '', /first-server serving/);
});
