/**
 * One conclusion, every view (issue 34): a real simulator experiment run by the CLI, with a lossless and a lossy
 * fast variant and quality.equivalence on, no objective given. The lossy one is the fastest, but its answers changed:
 * `run`, `show` (+ `--json`), `ls`, the Markdown and HTML reports, the dashboard and `export` all say
 * "outputs changed" / infeasible for it, and all rank the lossless one first.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startUi } from '../src/ui/server.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { type CliResult, cli, simCommand, writeExperiment } from './support-experiment.js';
import { needs } from './support-services.js';

/** The verdict row of a variant in a plain-text table (columns two spaces apart). */
const rowOf = (text: string, variant: string): string[] =>
  text
    .split('\n')
    .find((line) => line.startsWith(`${variant} `))!
    .trim()
    .split(/\s{2,}/);

describe('one conclusion, every view', { timeout: 300_000 }, () => {
  let store: string;
  let dir: string;
  let run: CliResult;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'servelab-conclusion-'));
    store = join(dir, 'store.db');
    const file = writeExperiment(dir, 'spec.yaml', {
      server: { command: simCommand({ tpotMs: 4 }), readyTimeout: '5m' },
      trials: 4,
      variants: {
        baseline: {},
        // Faster and lossless: the same answers sooner.
        lossless: { args: ['--tpot-ms', '2'] },
        // Faster still, but three tokens in ten replaced.
        lossy: { args: ['--tpot-ms', '1', '--lossy', '0.3'] },
      },
      quality: { equivalence: { prompts: 8, outputTokens: 32 } },
    });
    run = await cli(['run', file], { store, timeoutMs: 240_000 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('run, show, ls, the reports and export name the lossy config "outputs changed" and rank the lossless one first', async () => {
    assert.equal(run.code, 0, run.stderr);
    // The run's verdict row: its label and the conclusion's tag, the outputs column beside it.
    const lossyRow = rowOf(run.stdout, 'lossy');
    assert.match(lossyRow.at(-2)!, /^(faster|no significant difference), outputs changed$/, lossyRow.join(' | '));
    assert.equal(lossyRow.at(-1), 'outputs changed');
    assert.doesNotMatch(rowOf(run.stdout, 'lossless').at(-2)!, /outputs changed|infeasible/);
    assert.match(run.stdout, /^1 +lossless /m);
    assert.match(run.stdout, /^3 +lossy .*infeasible: outputs changed/m);

    const shown = await cli(['show', '1', '--json'], { store });
    assert.equal(shown.code, 0, shown.stderr);
    const view = JSON.parse(shown.stdout);
    const lossy = view.conclusion.configs.find((config: { variant: string }) => config.variant === 'lossy');
    assert.equal(lossy.feasible, false);
    assert.equal(lossy.equivalence, 'outputs changed');
    assert.equal(lossy.tag, 'outputs changed');
    const verdict = view.conclusion.verdicts.find((entry: { variant: string }) => entry.variant === 'lossy');
    assert.equal(verdict.outcome, `${verdict.label}, outputs changed`);
    assert.equal(view.best.winner, 'lossless');
    assert.equal(view.best.ranking[0].variant, 'lossless');

    const text = (await cli(['show', '1'], { store })).stdout;
    assert.equal(rowOf(text.slice(text.indexOf('verdicts vs baseline:')), 'lossy').at(-2), verdict.outcome);

    const listed = (await cli(['ls'], { store })).stdout;
    assert.match(listed, new RegExp(`lossy@single-stream ${verdict.outcome} [+−]\\d`));

    const out = join(dir, 'report');
    const report = await cli(['report', '1', '--out', out], { store });
    assert.equal(report.code, 0, report.stderr);
    const markdown = readFileSync(join(out, 'run-1.md'), 'utf8');
    assert.match(markdown, new RegExp(`^\\| lossy \\|.*\\| ${verdict.outcome} \\|$`, 'm'));
    const html = readFileSync(join(out, 'run-1.html'), 'utf8');
    assert.ok(html.includes(`<span class="pill infeasible">${verdict.outcome}</span>`), 'the HTML verdict row is no green badge');
    assert.match(html, /<tr class=""><td class="num">1<\/td><td><code>lossless<\/code>/);

    const exported = await cli(['export', '1', '--format', 'csv'], { store });
    assert.equal(exported.code, 0, exported.stderr);
    const [header, ...lines] = exported.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(','));
    const column = (name: string): number => header!.indexOf(name);
    for (const line of lines) {
      const variant = line[column('variant')];
      assert.equal(line[column('conclusion.feasible')], variant === 'lossy' ? '0' : '1', line.join(','));
      assert.equal(line[column('conclusion.equivalence')], { baseline: 'baseline', lossless: 'equivalent', lossy: 'outputs changed' }[variant!]);
      assert.ok(Number(line[column('conclusion.tokenAgreement')]) <= 1);
    }
  });

  test('the dashboard shows the best config and the ranking, the lossy config infeasible with its reason', { ...needs(NO_BROWSER) }, async () => {
    assert.equal(run.code, 0, run.stderr);
    const ui = await startUi({ storePath: store, port: 0, host: '127.0.0.1' });
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(`${ui.url}#run=1`);
      const best = page.locator('#best');
      await best.locator('table.ranking').waitFor({ timeout: 20_000 });
      assert.match((await best.locator('.card.best').textContent()) ?? '', /lossless ranks first|lossless is the best config/);
      const rows = await best.locator('table.ranking tbody tr').allTextContents();
      assert.match(rows[0]!, /^1lossless/);
      assert.match(rows.at(-1)!, /lossy.*infeasible: outputs changed \(answers differ early or widely/);
      const badge = page.locator('#verdicts .pill.infeasible');
      assert.match((await badge.textContent()) ?? '', /, outputs changed$/);
      await page.screenshot({ path: '/tmp/conclusion-ui.png', fullPage: true });
    } finally {
      await browser.close();
      await ui.close();
    }
  });
});
