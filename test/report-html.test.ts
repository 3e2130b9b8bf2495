import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { judgeEquivalence } from '../src/experiment/analysis/equivalence.js';
import { equivalenceHtml } from '../src/report/equivalence-html.js';
import { renderHtmlReport } from '../src/report/html.js';
import { buildRunReport } from '../src/report/model.js';
import { loadRunData } from '../src/report/queries.js';
import { writeReports } from '../src/report/write.js';
import type { EquivalencePass } from '../src/store/equivalence.js';
import { startUi } from '../src/ui/server.js';
import { buildFixtureRun, createFixtureStore } from './report-fixture.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { needs } from './support-services.js';

const artifacts = resolve('test-artifacts');

describe('servelab report', () => {
  test('HTML report renders every chart in headless Chromium without console errors', needs(NO_BROWSER), async (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const first = buildFixtureRun(store);
    const second = buildFixtureRun(store, { scale: 0.7, env: { NCCL_ALGO: 'Tree' }, status: 'drift', message: 'baseline 62.9 tok/s vs 88.8 recorded (−29%)' });
    const [, written] = writeReports(store.db, [first, second], join(store.dir, 'out'));
    assert.ok(written);

    const browser = await launchBrowser();
    t.after(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('request', (request) => {
      if (!request.url().startsWith('file:')) problems.push(`external request ${request.url()}`);
    });
    await page.goto(`file://${written.html}`);

    const figures = await page.$$eval('figure[data-figure]', (nodes) =>
      nodes.map((node) => {
        const svg = node.querySelector('svg')!.getBoundingClientRect();
        // Marks = data paths (lines, bars, error bars) with a real extent on screen.
        const marks = [...node.querySelectorAll('path')].filter((path) => {
          const box = path.getBoundingClientRect();
          return box.width > 0 || box.height > 0;
        }).length;
        return { id: node.getAttribute('data-figure'), width: svg.width, height: svg.height, marks };
      }),
    );
    assert.deepEqual(
      figures.map((figure) => figure.id),
      [
        'trials-0',
        'trials-1',
        'trials-2',
        'throughput',
        'speedup',
        'ttft-cdf',
        'e2e-cdf',
        'acceptance',
        'param-steps',
        'acceptance-by-position',
        'pareto-user',
        'pareto-ttft',
      ],
    );
    for (const figure of figures) {
      assert.ok(figure.width > 300 && figure.height > 200, `${figure.id} has size ${figure.width}x${figure.height}`);
      assert.ok(figure.marks >= 5, `${figure.id} draws ${figure.marks} marks`);
    }
    // 3 workloads x 4 variants, the baseline rows included.
    assert.equal(await page.locator('table.verdicts tbody tr').count(), 12);
    assert.match(await page.locator('ul.notes li.alarm').first().innerText(), /Drift alarm stopped this run/);
    assert.ok((await page.locator('table.changes td', { hasText: 'env.NCCL_ALGO' }).count()) === 1, 'environment diff vs the previous run lists NCCL_ALGO');
    assert.ok((await page.locator('table.drift tr.alarm').count()) > 0, 'the slower run is flagged as drift against the first');

    mkdirSync(artifacts, { recursive: true });
    await page.screenshot({ path: join(artifacts, 'report.png'), fullPage: true });
    assert.deepEqual(problems, []);
  });

  test('Markdown summary carries no live markup: read as raw HTML in Chromium (what renderers pass through), nothing runs', needs(NO_BROWSER), async (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const hostile = '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script> **bold** [link](javascript:alert(1))';
    const run = buildFixtureRun(store, { status: 'failed', message: hostile });
    const [written] = writeReports(store.db, [run], join(store.dir, 'out'));
    const markdown = readFileSync(written!.markdown, 'utf8');
    assert.ok(!markdown.includes('<img') && !markdown.includes('<script'), markdown);
    const browser = await launchBrowser();
    t.after(() => browser.close());
    const page = await browser.newPage();
    await page.setContent(markdown);
    assert.equal(await page.locator('img, script').count(), 0);
    assert.equal(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned), undefined);
    assert.match(await page.innerText('body'), /<img src=x onerror=/);
  });

  test('Markdown summary has the verdict table, fingerprint summary and drift notes', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const runId = buildFixtureRun(store);
    const [written] = writeReports(store.db, [runId], join(store.dir, 'out'));
    const markdown = readFileSync(written!.markdown, 'utf8');
    assert.match(
      markdown,
      /\| workload \| variant \| trials \| median tok\/s \| change vs baseline \| 95% CI of change \| p-value \| failed requests \(this variant\) \| invalid trials \(this variant\) \| verdict \|/,
    );
    assert.match(markdown, /\| c=1 \| eagle3-s4 \| 4 \| [\d.,]+ \| \+\d+\.\d% \| \+\d+\.\d% … \+\d+\.\d% \| 0\.029 \| 0 \| 0 \| \*\*faster\*\* \|/);
    assert.match(markdown, /\| c=32 \| eagle3-s6 \| 4 \| [\d.,]+ \| −\d+\.\d% \| .* \| \*\*slower\*\* \|/);
    assert.match(markdown, /\| gpus\.0\.name \| NVIDIA H200 \|/);
    assert.match(markdown, /## Drift notes\n\nNone/);
  });

  test('every Markdown table has as many cells in each row as its header and delimiter, side columns included', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const runId = buildFixtureRun(store, { metrics: { prefixCacheHitRate: 0.42, powerW: 650, joulesPerToken: 0.8 } });
    const [written] = writeReports(store.db, [runId], join(store.dir, 'out'));
    const markdown = readFileSync(written!.markdown, 'utf8');
    assert.match(markdown, /\| prefix-cache hits \| GPU W \| J\/tok \| verdict \|/);
    const tables = markdown
      .split(/\n(?!\|)/)
      .map((block) => block.trim())
      .filter((block) => block.startsWith('|'));
    assert.ok(tables.length >= 2, markdown);
    // A cell's own pipes are escaped (\|): only unescaped ones separate cells.
    const cells = (line: string): number => line.split(/(?<!\\)\|/).length - 2;
    for (const table of tables) {
      const [header, ...rest] = table.split('\n');
      for (const line of rest) assert.equal(cells(line), cells(header!), `${line}\nunder ${header}`);
    }
  });

  test('redaction markers are escaped text in the HTML report, the Markdown summary and the UI, never a tag the browser drops', async (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    // The store hides the password as it writes the fingerprint: a marker inside a URL.
    const runId = buildFixtureRun(store, { env: { HUB_URL: 'https://alice:hubSECRETpw@hub.example/x' } });
    // A store written before redaction existed: its message still holds a token, hidden at the view.
    store.db.prepare('UPDATE runs SET message = ? WHERE id = ?').run('pull failed: Authorization: Bearer oldSECRETtoken', runId);
    const [written] = writeReports(store.db, [runId], join(store.dir, 'out'));
    const html = readFileSync(written!.html, 'utf8');
    const markdown = readFileSync(written!.markdown, 'utf8');
    const ui = await startUi({ storePath: store.path, host: '127.0.0.1', port: 0 });
    t.after(() => ui.close());
    const view = (await (await fetch(new URL(`/api/runs/${runId}`, ui.url))).json()) as { html: Record<string, string> };
    const fragments = Object.values(view.html).join('\n');
    for (const [what, text] of Object.entries({ html, markdown, 'the UI': fragments })) {
      assert.doesNotMatch(text, /SECRET/, `${what} leaks`);
      assert.doesNotMatch(text, /<redacted/, `${what} holds a raw marker`);
      assert.match(text, /alice:&lt;redacted:[0-9a-f]{12}&gt;@hub/, `${what}: the stored marker is shown as it was stored`);
      assert.match(text, /Bearer &lt;redacted:[0-9a-f]{12}&gt;/, `${what}: an old store's token is hidden by an escaped marker`);
    }
  });

  test('side-by-side answers wrap: a long unbroken answer widens neither the report nor the UI page', needs(NO_BROWSER), async (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const runId = buildFixtureRun(store);
    const long = 'x'.repeat(6000);
    const pass = (variant: string, serverId: number, text: string): EquivalencePass => ({
      variant,
      serverId,
      concurrency: 1,
      startedAt: new Date().toISOString(),
      outputs: [{ prompt: 0, level: 'c=1', text }],
    });
    const fragment = equivalenceHtml(
      judgeEquivalence([pass('baseline', 1, `${long}a`), pass('eagle3-s2', 2, `${long}b`)], 'baseline', ['baseline', 'eagle3-s2'], 128),
    );
    const file = join(store.dir, 'report.html');
    writeFileSync(file, renderHtmlReport(buildRunReport(loadRunData(store.db, runId)!), [], undefined, fragment));
    const ui = await startUi({ storePath: store.path, host: '127.0.0.1', port: 0 });
    t.after(() => ui.close());
    const browser = await launchBrowser();
    t.after(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const width = (): Promise<number> => page.locator('html').evaluate((node) => node.scrollWidth);

    await page.goto(`file://${file}`);
    assert.equal(await page.locator('.answers pre').count(), 2);
    assert.ok((await width()) <= 1280, `the report is ${await width()} px wide`);
    // The UI puts the same server-rendered fragment under its verdicts, as app.js does with the run's quality HTML.
    await page.goto(ui.url);
    await page.locator('#run').waitFor();
    await page.locator('#quality').evaluate((node, html) => {
      node.innerHTML = html;
    }, fragment);
    assert.ok((await width()) <= 1280, `the UI page is ${await width()} px wide`);
  });

  test('CLI writes the latest run by default and fails cleanly on an unknown run', (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const runId = buildFixtureRun(store, { trials: 10 });
    const out = join(store.dir, 'cli-out');
    const ok = spawnSync(process.execPath, ['bin/servelab.js', 'report', '--store', store.path, '--out', out, '--json'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(ok.status, 0, ok.stderr);
    const written = JSON.parse(ok.stdout) as Array<{ runId: number; html: string }>;
    assert.equal(written[0]!.runId, runId);
    assert.match(readFileSync(written[0]!.html, 'utf8'), /<svg/);

    const missing = spawnSync(process.execPath, ['bin/servelab.js', 'report', '99', '--store', store.path, '--out', out], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(missing.status, 2, 'an unknown run id is a usage error');
    assert.match(missing.stderr, /run 99 is not in the store\n {2}next: /);
    assert.doesNotMatch(missing.stderr, /at .*\.js:\d+/);
  });
});
