import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { writeReports } from '../src/report/write.js';
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
