import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { startUi } from '../src/ui/server.js';
import { launchBrowser, NO_BROWSER } from './support-browser.js';
import { cli, simCommand, writeExperiment } from './support-experiment.js';
import { lanesOfBlocks, type TrialRow, trialsOf, twins } from './support-lanes.js';

describe('lanes', () => {
  let measured: { dir: string; store: string; trials: TrialRow[] } | undefined;
  const dirs: string[] = [];
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('identical variants on a lane 15% faster: the 15% between lanes never reaches the comparison, and the lane report names the fast lane with its env', async () => {
    // Kept until the view test below has read it (tempDir would remove it when this test ends).
    const dir = mkdtempSync(join(tmpdir(), 'servelab-lanes-speed-'));
    dirs.push(dir);
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'lanes.yaml', {
      name: 'lanes-speed',
      // Request time, mostly decode (16 steps of 30 ms): what --env-speedup changes. Not tpot: on a starved box the client
      // can read a request's tokens in one burst (a tpot near 0), while its end-to-end time stays right; the median of 8
      // requests a trial keeps a stalled one from moving the trial's figure.
      metric: 'e2eMedianMs',
      server: { command: simCommand({ tpotMs: 30, extra: ['--env-speedup', 'LANE=1:1.15'] }), readyTimeout: '5m' },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 16, seed: 3 }, warmupRequests: 1 },
      fingerprint: { envPatterns: ['LANE'] },
      lanes: [{ env: { LANE: '0' } }, { env: { LANE: '1' } }],
      variants: twins,
      workloads: [{ kind: 'single-stream', requests: 8 }],
      trials: 8,
    });
    const run = await cli(['run', file], { store, timeoutMs: 180_000 });
    assert.equal(run.code, 0, run.stderr);
    // Identical configs: the rank-sum test calls them different at its α (CI once saw +0.5%, CI +0.1% … +0.8%,
    // p 0.016 on a loaded box). What lanes must guarantee is that the 15% between lanes never reaches the
    // comparison: the whole CI of the change stays within ±3%.
    const row = run.stdout.match(/twin\s+single-stream\s+\S+\s+\S+\s+\S+\s+([+−-][\d.]+)% … ([+−-][\d.]+)%/);
    assert.ok(row, run.stdout);
    const [low, high] = [row[1]!, row[2]!].map((value) => Number(value.replace('−', '-')));
    assert.ok(low! > -3 && high! < 3, `CI of the change ${low}% … ${high}%:\n${run.stdout}`);
    assert.match(
      run.stdout,
      /lanes: verdicts compare configs within each lane\n {2}lane1: (\d+) trials \(baseline \d+, twin \d+\) in blocks [\d, –]+\n {2}lane2: \d+ trials/,
    );
    assert.match(run.stdout, /lane2 is −\d+\.\d% \(faster\) vs the other lanes at the same configs \(single-stream: CI .*, p = .*\); fingerprint: LANE 0 → 1/);
    assert.match(run.stdout, /lane1 is \+\d+\.\d% \(slower\)/);
    // Both lanes ran at once: their log lines carry their names.
    assert.match(run.stderr, /\[lane1\] starting server/);
    assert.match(run.stderr, /\[lane2\] starting server/);
    // stderr is a pipe here: the lanes' live state never redraws it (no carriage return, no escape sequence).
    assert.ok(!run.stderr.includes('\r') && !run.stderr.includes('\u001b'), run.stderr);

    const trials = trialsOf(store, 1);
    assert.equal(trials.length, 16);
    assert.equal(new Set(trials.map((trial) => `${trial.variant} ${trial.block}`)).size, 16, 'no trial measured twice');
    for (const [block, lanes] of lanesOfBlocks(trials)) assert.equal(lanes.size, 1, `block ${block + 1} ran on one lane`);
    assert.deepEqual(new Set(trials.map((trial) => trial.lane)), new Set([0, 1]));

    measured = { dir, store, trials };
  });

  // Its own test (and time limit) on the store the test above measured.
  test('every view carries the lane report and which lane measured each trial: show (+ --json), report, export, UI', async (t) => {
    assert.ok(measured, 'the run above measured the store');
    const { dir, store, trials } = measured;
    // Every view carries the lane report and which lane measured each trial, from the one conclusion model.
    const finding = /lane2 is −\d+\.\d% \(faster\) vs the other lanes at the same configs \(single-stream: CI [^)]*\); fingerprint: LANE 0 → 1/;
    const shown = await cli(['show', '1'], { store });
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, finding);
    const laneOfTrial = new Map(trials.map((trial) => [`${trial.variant} ${trial.block + 1}`, `lane${trial.lane! + 1}`]));
    const shownRows = shown.stdout.split('\n').filter((line) => /^trial \d+\/16 /.test(line));
    assert.equal(shownRows.length, 16);
    for (const row of shownRows) {
      const [, block, variant, , lane] = row.trim().split(/\s{2,}/);
      assert.equal(lane, laneOfTrial.get(`${variant} ${block!.replace('block ', '')}`), row);
    }
    const json = await cli(['show', '1', '--json'], { store });
    const conclusion = JSON.parse(json.stdout).conclusion as {
      lanes: { lanes: Array<{ name: string; trials: number }>; findings: Array<{ name: string; label: string }> };
    };
    assert.deepEqual(
      conclusion.lanes.lanes.map((lane) => [lane.name, lane.trials]),
      [0, 1].map((lane) => [`lane${lane + 1}`, trials.filter((trial) => trial.lane === lane).length]),
    );
    assert.deepEqual(
      conclusion.lanes.findings.map((found) => `${found.name} ${found.label}`),
      ['lane1 slower', 'lane2 faster'],
    );

    const reports = await cli(['report', '1', '--out', join(dir, 'report')], { store });
    assert.equal(reports.code, 0, reports.stderr);
    const markdown = readFileSync(join(dir, 'report', 'run-1.md'), 'utf8');
    assert.match(markdown, /## Lanes\n\n```\nlanes: verdicts compare configs within each lane\n {2}lane1: /);
    assert.match(markdown, finding);
    // A lane's own env (LANE) is the lane's, not drift within a variant nor a difference of the twin's config.
    assert.doesNotMatch(markdown, /environment changed/);
    assert.doesNotMatch(markdown, /differs from the baseline in: .*LANE/);
    const html = readFileSync(join(dir, 'report', 'run-1.html'), 'utf8');
    assert.match(html, /<h2>Lanes<\/h2>/);
    assert.match(html, finding);
    assert.match(html, /<th>lane<\/th>/);

    const exported = await cli(['export', '1', '--format', 'jsonl'], { store });
    assert.equal(exported.code, 0, exported.stderr);
    const rows = exported.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { variant: string; block: number; lane: string });
    assert.deepEqual(rows.map((row) => `${row.variant} ${row.block} ${row.lane}`).sort(), [...laneOfTrial].map(([trial, lane]) => `${trial} ${lane}`).sort());

    // The dashboard shows the same lane section (headless Chromium against a real UI server).
    if (NO_BROWSER !== undefined) return t.diagnostic(`UI not checked: ${NO_BROWSER}`);
    const ui = await startUi({ storePath: store, host: '127.0.0.1', port: 0, pollMs: 200 });
    t.after(() => ui.close());
    const browser = await launchBrowser();
    t.after(() => browser.close());
    const page = await browser.newPage();
    await page.goto(`${ui.url}#run=1`);
    const section = page.locator('#lanes section.lanes');
    await section.waitFor({ timeout: 20_000 });
    const text = (await section.textContent()) ?? '';
    assert.match(text, /Lanes/);
    assert.match(text, /lane1: \d+ trials \(baseline \d+, twin \d+\)/);
    assert.match(text, finding);
    const laneCells = await page.$$eval('table.trials tbody tr', (rows) => rows.map((row) => row.querySelectorAll('td')[4]?.textContent ?? ''));
    assert.deepEqual(new Set(laneCells), new Set(['lane1', 'lane2']));
  });
});
