import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { cli, simCommand, tempDir, writeExperiment } from './support-experiment.js';

/**
 * A search on real simulator processes: points become servers as the strategy asks for them, every block measures
 * its points at both levels, the decisions are stored, and the run ends with the best config per level stated
 * with its tolerance. The stopping rules themselves are tested on known responses in search-strategy.
 */
describe('search run', () => {
  test('a small space end to end: plan, blocks on real servers, decisions stored, best per level, show', async (t) => {
    const dir = tempDir(t, 'search-run');
    const store = join(dir, 'store.db');
    // Draft length × acceptance: longer drafts pay at high acceptance only (the simulator's speculative model).
    const file = writeExperiment(dir, 'search.yaml', {
      name: 'search-small',
      variants: {},
      server: { command: simCommand({ tpotMs: 4, loadMs: 50, extra: ['--spec-draft-overhead', '0.15'] }), readyTimeout: '5m' },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 32, seed: 3 }, warmup: { requests: 1 } },
      workloads: [
        { kind: 'single-stream', requests: 3 },
        { kind: 'concurrency', concurrency: 4, requests: 8 },
      ],
      objective: { maximize: 'outputTokensPerSecond' },
      search: {
        name: 'd{draft}-a{accept}',
        knobs: { draft: { min: 0, max: 6 }, accept: [0.3, 0.9] },
        args: ['--spec-draft-tokens', '{draft}', '--spec-acceptance', '{accept}'],
        constraints: ['draft <= 5'],
        tolerance: '5%',
        tieBreak: ['draft'],
        budget: { wallTime: '10m' },
      },
    });
    const plan = await cli(['plan', file], { store });
    assert.equal(plan.code, 0, plan.stderr);
    assert.match(plan.stdout, /12 valid points of 14 combinations, each measured at 2 levels \(single-stream, c=4\)/);
    assert.match(plan.stdout, /constraint: draft <= 5/);
    assert.match(plan.stdout, /budget: 10 min of GPU time \(0\.17 GPU-hours\)/);

    const run = await cli(['run', file], { store, timeoutMs: 300_000 });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stderr, /search: before block 1: 0 of 12 points measured/);
    assert.match(run.stdout, /best per level/);
    assert.match(run.stdout, /^ {2}single-stream: d\d-a0\.\d /m);
    assert.match(run.stdout, /^ {2}c=4: d\d-a0\.\d /m);
    // The ranking covers the measured points only, not the space's never-measured ones (n 0).
    assert.doesNotMatch(run.stdout, /^\d+ +\S+ +— +0 *$/m, run.stdout);

    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const steps = db.prepare('SELECT block, step_json FROM search_steps ORDER BY block').all() as Array<{ block: number; step_json: string }>;
    assert.ok(steps.length >= 2, `${steps.length} steps`);
    assert.deepEqual(
      steps.map((step) => step.block),
      steps.map((_, index) => index),
    );
    const last = JSON.parse(steps.at(-1)!.step_json) as { done?: { reason: string } };
    assert.ok(last.done, 'the last step ends the search');
    // Every trial of the run is of a block some step asked for, at every level, and each planned trial was measured.
    const trials = db.prepare('SELECT variant, workload, block FROM trials').all() as Array<{ variant: string; workload: string; block: number }>;
    const asked = new Map(steps.map((step) => [step.block, (JSON.parse(step.step_json) as { measure: string[] }).measure.length]));
    for (const [block, count] of asked) assert.equal(trials.filter((trial) => trial.block === block).length, count * 2, `block ${block}`);
    const measured = new Set(trials.map((trial) => trial.variant)).size;
    assert.ok(measured < 12, `${measured} of 12 points measured`);

    const show = await cli(['show', '1', '--json'], { store });
    assert.equal(show.code, 0, show.stderr);
    assert.equal((JSON.parse(show.stdout) as { searchSteps: unknown[] }).searchSteps.length, steps.length);
    const text = await cli(['show', '1'], { store });
    assert.match(text.stdout, /best per level/);
    // run's final text has the per-point table `show` prints, line for line, before the answer that ends it.
    const pointTable = (output: string): string => {
      const from = output.indexOf('search decisions per point (the answer first):\n');
      assert.ok(from >= 0, output);
      return output.slice(from, output.indexOf('\n\n', from));
    };
    assert.equal(pointTable(run.stdout), pointTable(text.stdout));
    assert.match(pointTable(run.stdout), /\n\(\d+ of 12 points never measured: ruled out by the response model\)$|\(each race: [^\n]+\)$/);
    assert.ok(run.stdout.indexOf('search decisions per point') < run.stdout.indexOf('best per level'));
  });

  test('run --json, show --json and ls --json of a search: its answer, no baseline and no verdicts against one', async (t) => {
    const dir = tempDir(t, 'search-run-json');
    const store = join(dir, 'store.db');
    // Two points a 50% tolerance settles in one block.
    const file = writeExperiment(dir, 'search.yaml', {
      name: 'search-json',
      variants: {},
      server: { command: simCommand({ loadMs: 50 }), readyTimeout: '5m' },
      client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 16, seed: 3 } },
      workloads: [{ kind: 'single-stream', requests: 3 }],
      objective: { maximize: 'outputTokensPerSecond' },
      search: { name: 'd{draft}', knobs: { draft: [0, 1] }, args: ['--spec-draft-tokens', '{draft}'], tolerance: '50%', budget: { wallTime: '5m' } },
    });
    const run = await cli(['run', file, '--json'], { store, timeoutMs: 120_000 });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const [shown, listed] = await Promise.all([cli(['show', '1', '--json'], { store }), cli(['ls', '--json'], { store })]);
    const outcome = JSON.parse(run.stdout) as Record<string, unknown> & { search: { leaders: Array<{ best: string }> }; conclusion: Record<string, unknown> };
    const show = JSON.parse(shown.stdout) as { run: Record<string, unknown> & { config: Record<string, unknown> }; search: unknown };
    const [ls] = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
    // The loader's placeholder baseline (the space's first point) is stored, and no verdicts against it (stores of
    // earlier versions have them; report/queries.ts runJson leaves them out of every JSON view).
    const stored = new Database(store, { readonly: true });
    t.after(() => stored.close());
    const row = stored.prepare('SELECT config_json, verdict_json FROM runs WHERE id = 1').get() as { config_json: string; verdict_json: string | null };
    assert.equal((JSON.parse(row.config_json) as { baseline: string }).baseline, 'd0');
    assert.equal(row.verdict_json, '[]', 'finalize stores no verdicts for a search');
    for (const [view, json] of [
      ['run --json', outcome],
      ['show --json', show.run],
      ['ls --json', ls!],
    ] as const) {
      assert.equal(json.verdicts, undefined, `${view}: no verdicts`);
      assert.equal((json.conclusion as { baseline?: string } | undefined)?.baseline, undefined, `${view}: no baseline`);
    }
    assert.equal(show.run.config.baseline, undefined, 'show --json: the config names no baseline');
    assert.ok(show.run.config.search && show.search && ls!.search && outcome.search.leaders.length > 0, 'the search in its place');
    assert.deepEqual(outcome.conclusion.verdicts, []);
  });
});
