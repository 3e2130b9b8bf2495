import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { insertServer, updateServer } from '../src/store/runs.js';
import { startUi } from '../src/ui/server.js';
import { buildFixtureRun, createFixtureStore } from './report-fixture.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { needs } from './support-services.js';

const SERVELAB = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const HOSTILE_NAME = '<img src=x onerror="window.__pwned=1">';
const HOSTILE_VARIANT = '<svg onload="window.__pwned=5">';
const HOSTILE_LABEL = '<script>window.__pwned=2</script>';
const HOSTILE_LOG = 'INFO loading\n<script>window.__pwned=3</script>\n<img src=x onerror="window.__pwned=4">\n';

test('log text and stored strings are shown as text, never run, and updates arrive without reload', { ...needs(NO_BROWSER), timeout: 60_000 }, async (t) => {
  const store = createFixtureStore();
  t.after(() => store.cleanup());
  const runId = buildFixtureRun(store, { trials: 12 });
  // The experiment loader only accepts plain names; the store itself holds any string, so plant hostile ones there.
  store.db.prepare('UPDATE experiments SET name = ?').run(HOSTILE_NAME);
  store.db.prepare("UPDATE trials SET variant = ? WHERE variant = 'eagle3-s2'").run(HOSTILE_VARIANT);
  const logPath = join(store.dir, 'server.log');
  writeFileSync(logPath, HOSTILE_LOG);
  const serverId = insertServer(store.db, {
    runId,
    runnerPid: process.pid,
    serverKey: 'k1',
    label: HOSTILE_LABEL,
    host: 'local',
    logPath,
    predictedReadyMs: 90_000,
  });
  updateServer(store.db, serverId, { phase: '<b>loading weights</b>' });

  const ui = await startUi({ storePath: store.path, host: '127.0.0.1', port: 0, pollMs: 200 });
  t.after(() => ui.close());
  const browser = await launchBrowser();
  t.after(() => browser.close());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(ui.url);

  await page.locator('#log', { hasText: 'window.__pwned=3' }).waitFor({ timeout: 15_000 });
  assert.equal(await page.locator('#log').textContent(), HOSTILE_LOG);
  assert.equal(await page.locator('#servers code').innerText(), HOSTILE_LABEL);
  assert.equal(await page.locator('#servers td.phase').innerText(), '<b>loading weights</b>');
  assert.equal(await page.locator('nav h3').innerText(), HOSTILE_NAME.toUpperCase());
  assert.match(await page.locator('#run-title').innerText(), /^<img src=x onerror="window.__pwned=1"> · run 1$/);
  // No element was created from any of the strings, and nothing ran.
  assert.equal(await page.locator('main script, nav script, #log *, #servers img, nav img, main img').count(), 0);
  // The hostile variant name reaches the verdict table and the SVG legends as text only.
  await page.locator('#verdicts code', { hasText: HOSTILE_VARIANT }).first().waitFor({ timeout: 10_000 });
  assert.ok((await page.locator('#figures svg text', { hasText: HOSTILE_VARIANT }).count()) > 0);
  assert.equal(await page.locator('#figures svg svg, #live-figures svg svg').count(), 0);
  assert.equal(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned), undefined);
  assert.deepEqual(dialogs, []);

  // Pushed updates: a new log line and a phase change show up without reloading the page.
  appendFileSync(logPath, 'INFO weights loaded & <ready>\n');
  updateServer(store.db, serverId, { phase: 'capturing CUDA graphs' });
  await page.locator('#log', { hasText: 'weights loaded & <ready>' }).waitFor({ timeout: 10_000 });
  await page.locator('#servers td.phase', { hasText: 'capturing CUDA graphs' }).waitFor({ timeout: 10_000 });

  mkdirSync(resolve('test-artifacts'), { recursive: true });
  await page.screenshot({ path: resolve('test-artifacts', 'ui-escape.png') });
});

test('ui is read-only, answers only loopback host names, and warns before binding a public address', { timeout: 60_000 }, async (t) => {
  const store = createFixtureStore();
  t.after(() => store.cleanup());
  buildFixtureRun(store, { trials: 4 });
  store.db.pragma('wal_checkpoint(TRUNCATE)');
  const before = statSync(store.path).mtimeMs;
  const ui = await startUi({ storePath: store.path, host: '127.0.0.1', port: 0 });
  t.after(() => ui.close());

  const fetchStatus = (method: string, path: string, host?: string): Promise<number> =>
    new Promise((done, fail) => {
      const target = new URL(path, ui.url);
      const req = request(
        { host: target.hostname, port: target.port, path: target.pathname + target.search, method, headers: host ? { host } : {} },
        (response) => {
          response.resume();
          done(response.statusCode ?? 0);
        },
      );
      req.on('error', fail);
      req.end();
    });
  assert.equal(await fetchStatus('GET', '/api/runs/1'), 200);
  assert.equal(await fetchStatus('GET', '/api/runs/42'), 404);
  assert.equal(await fetchStatus('POST', '/api/runs/1'), 405);
  assert.equal(await fetchStatus('DELETE', '/api/runs/1'), 405);
  assert.equal(await fetchStatus('GET', '/api/runs/1', 'attacker.example:8377'), 403);
  const port = new URL(ui.url).port;
  assert.equal(await fetchStatus('GET', '/api/runs/1', `localhost:${port}`), 200);
  assert.equal(await fetchStatus('GET', '/api/runs/1', `[::1]:${port}`), 200);
  // DNS rebinding: names that merely start like loopback, or the right name on another port, are refused.
  for (const host of [`127.evil.example.com:${port}`, `127.0.0.1.nip.io:${port}`, 'localhost:1', '127.0.0.1', `127.0.0.2:${port}`]) {
    assert.equal(await fetchStatus('GET', '/api/runs/1', host), 403, host);
  }
  assert.equal(statSync(store.path).mtimeMs, before, 'the store file was not written');

  // 192.0.2.1 (TEST-NET-1) is never a local address: the warning is printed, then binding fails cleanly.
  const publicHost = spawnSync(process.execPath, [SERVELAB, 'ui', '--host', '192.0.2.1', '--port', '0', '--store', store.path], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  assert.match(publicHost.stderr, /WARNING: listening on 192\.0\.2\.1: anyone .* has the token/);
  assert.match(publicHost.stderr, /cannot listen on 192\.0\.2\.1:0: .*\n {2}next: /);
  assert.equal(publicHost.status, 1);

  const noStore = spawnSync(process.execPath, [SERVELAB, 'ui', '--port', '0', '--store', join(store.dir, 'missing.db')], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(noStore.status, 1);
  assert.match(noStore.stderr, /no store at .*missing\.db\n {2}next: run an experiment first/);
});

test('ui --token: every request needs the token; the URL with it sets a cookie once', { timeout: 60_000 }, async (t) => {
  const store = createFixtureStore();
  t.after(() => store.cleanup());
  buildFixtureRun(store, { trials: 4 });
  const ui = await startUi({ storePath: store.path, host: '127.0.0.1', port: 0, token: 'tok-abc' });
  t.after(() => ui.close());
  const base = new URL(ui.url);
  assert.equal(base.searchParams.get('token'), 'tok-abc');
  assert.equal((await fetch(new URL('/api/runs/1', base.origin))).status, 403);
  assert.equal((await fetch(new URL('/api/runs/1?token=wrong', base.origin))).status, 403);
  assert.equal((await fetch(new URL('/api/runs/1', base.origin), { headers: { authorization: 'Bearer tok-abc' } })).status, 200);
  const entry = await fetch(ui.url, { redirect: 'manual' });
  assert.equal(entry.status, 303);
  const cookie = entry.headers.get('set-cookie')!.split(';')[0]!;
  assert.equal((await fetch(new URL('/api/runs/1', base.origin), { headers: { cookie } })).status, 200);
});
