/**
 * Views a person reads, each fixed after a review of a real run: Markdown tables whose header and rows agree,
 * redaction markers as escaped text (not tags a browser drops), side-by-side answers that wrap.
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

describe('report views', () => {
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
});
