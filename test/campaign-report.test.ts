import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { bestConfig } from '../src/experiment/analysis/best.js';
import { loadRun } from '../src/experiment/run/run-store.js';
import { writeReports } from '../src/report/write.js';
import { listTrials } from '../src/store/queries.js';
import { buildFixtureRun, createFixtureStore } from './report-fixture.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { needs } from './support-services.js';

describe('best-config report', () => {
  test('the pairwise matrix, ranking and numeric parameter chart render in Chromium', needs(NO_BROWSER), async (t) => {
    const store = createFixtureStore();
    t.after(() => store.cleanup());
    const runId = buildFixtureRun(store);
    const [written] = writeReports(store.db, [runId], join(store.dir, 'out'));
    const best = bestConfig(loadRun(store.db, runId).experiment, listTrials(store.db, runId));
    assert.ok(best.winner);

    const browser = await launchBrowser();
    t.after(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    await page.goto(`file://${written!.html}`);

    // 4 configs: a 4×4 matrix, '·' on the diagonal, each cell the inverse change of its mirror.
    const matrix = await page.$$eval('table.pairwise tbody tr', (rows) =>
      rows.map((row) =>
        [...row.querySelectorAll('td')].map((cell) => ({
          text: cell.textContent ?? '',
          className: cell.className,
          visible: cell.getBoundingClientRect().width > 0,
        })),
      ),
    );
    assert.equal(matrix.length, 4);
    matrix.forEach((cells, i) => {
      assert.equal(cells.length, 4);
      assert.equal(cells[i]!.text, '·');
      assert.ok(cells.every((cell) => cell.visible));
    });
    const rowNames = await page.$$eval('table.pairwise tbody th', (cells) => cells.map((cell) => cell.textContent));
    assert.deepEqual(
      rowNames,
      best.ranking.map((row) => row.variant),
    );
    // The winner's row: significantly better (green) wherever the verdict says so, and never worse.
    best.matrix[0]!.forEach((cell, j) => {
      if (j === 0) return;
      assert.equal(matrix[0]![j]!.className.includes('better'), cell.better, `${cell.row} vs ${cell.column}`);
      assert.ok(!matrix[0]![j]!.className.includes('worse'));
      assert.ok(matrix[j]![0]!.className.includes('worse') === cell.better);
    });
    // 4 vs 4 trials over 6 Holm-corrected pairs cannot reach significance: the matrix must not claim it either.
    assert.ok(best.matrix.flat().every((cell) => !cell.better && !cell.worse));
    assert.match((await page.locator('table.pairwise td[data-row]').first().getAttribute('title')) ?? '', /Holm-adjusted p \d/);
    assert.match(await page.locator('div.best').innerText(), /ranks first, but is not significantly better than/);
    // The badge says what the verdict says: first in the ranking, not a significant winner (no green "winner").
    const first = page.locator('table.ranking tbody tr').first();
    assert.match(await first.innerText(), new RegExp(`${best.winner}[\\s\\S]*ranks first \\(not significant\\)`));
    assert.equal(await first.locator('.pill.faster').count(), 0);
    assert.match(await page.locator('div.best').innerText(), /vs the baseline \(baseline\): \+\d/);

    // The grid parameter is drawn on a value axis: its tick labels are numbers in order.
    const ticks = await page.$$eval('figure[data-figure="param-steps"] text', (nodes) => nodes.map((node) => node.textContent ?? ''));
    const numeric = ticks.filter((text) => /^\d+(\.\d+)?$/.test(text)).map(Number);
    assert.ok(numeric.includes(2) && numeric.includes(6), `ticks: ${ticks.join(' ')}`);
    assert.equal(await page.locator('figure[data-figure="pareto-user"]').count(), 1);

    // Speculative decoding next to throughput: 4 variants × 3 workloads, acceptance only where drafting happens.
    const spec = await page.$$eval('table.spec tbody tr', (rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '')));
    assert.equal(spec.length, 12);
    assert.deepEqual(
      spec.map((cells) => cells[0]).filter((name, index, all) => all.indexOf(name) === index),
      ['baseline', 'eagle3-s2', 'eagle3-s4', 'eagle3-s6'],
    );
    for (const cells of spec) assert.equal(/^\d/.test(cells[5]!), cells[0] !== 'baseline', cells.join(' | '));
    // Acceptance by draft position for every drafting variant: one share per position, falling with it.
    for (const cells of spec) {
      const steps = cells[0] === 'baseline' ? 0 : Number(cells[0]!.replace('eagle3-s', ''));
      if (steps === 0) assert.equal(cells[8], '-');
      else {
        const shares = cells[8]!.split('/').map(Number);
        assert.equal(shares.length, steps, cells.join(' | '));
        assert.ok(
          shares.every((share: number, index: number) => index === 0 || share <= shares[index - 1]!),
          cells[8],
        );
      }
    }
    const positionChart = page.locator('figure[data-figure="acceptance-by-position"]');
    assert.equal(await positionChart.count(), 1);
    const chartText = await positionChart.locator('svg text').allTextContents();
    for (const label of ['1', '6', 'draft position', 'eagle3-s2 · c=1', 'eagle3-s6 · c=1'])
      assert.ok(chartText.includes(label), `${label} in ${chartText.join(' ')}`);
    assert.ok(!chartText.some((text) => text.startsWith('baseline')), 'no bars for the non-drafting baseline');
    assert.deepEqual(problems, []);
  });
});
