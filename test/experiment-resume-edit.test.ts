/**
 * `run --resume N` after the experiment file was edited: the stored experiment is what a run is, so the resume
 * refuses with the list of differences (secrets as markers), or replays the stored experiment with --use-stored.
 * With and without secrets in the file, the same.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import Database from 'better-sqlite3';
import { jsonDifferences } from '../src/experiment/run/resume-check.js';
import { cli, SERVELAB, tempDir, writeExperiment } from './support-experiment.js';

const TOKEN = 'hf_SECRETresume0123456789abcdef';

/** A simulator behind a shell that fails while `failFile` exists (to leave a run unfinished) and, with a secret, unless it got it. */
function serverCommand(failFile: string, loadMs: number, secret: boolean): string[] {
  const script = [
    `[ -e "${failFile}" ] && exit 3`,
    ...(secret ? [`[ "$HF_TOKEN" = "${TOKEN}" ] || exit 7`] : []),
    `exec "${process.execPath}" "${SERVELAB}" simulate --port "$1" --load-ms ${loadMs} --tpot-ms 2 --ttft-ms 5 --jitter 0.02`,
  ].join('; ');
  return ['sh', '-c', script, 'sim', '{port}'];
}

async function scenario(t: TestContext, secret: boolean): Promise<void> {
  const dir = tempDir(t, secret ? 'resume-edit-secret' : 'resume-edit');
  const store = join(dir, 'servelab.db');
  const failFile = join(dir, 'fail-now');
  const experiment = (edited: boolean): Record<string, unknown> => ({
    name: 'edited',
    server: {
      command: serverCommand(failFile, edited ? 60 : 50, secret),
      ...(secret && { env: { HF_TOKEN: TOKEN } }),
      readyTimeout: '5m',
    },
    trials: edited ? 3 : 2,
    variants: edited ? { baseline: {}, fast: { env: { SIM_FAST: '1' } } } : { baseline: {} },
  });
  const file = writeExperiment(dir, 'exp.yaml', experiment(false));

  writeFileSync(failFile, '');
  const failed = await cli(['run', file], { store });
  assert.notEqual(failed.code, 0, failed.stderr);
  rmSync(failFile);

  writeExperiment(dir, 'exp.yaml', experiment(true));
  for (const args of [
    ['run', '--resume', '1'],
    ['run', file, '--resume'],
  ]) {
    const refused = await cli(args, { store });
    assert.equal(refused.code, 1, refused.stderr);
    const line = refused.stderr.split('\n').find((text) => text.startsWith('servelab: '))!;
    assert.match(line, /run 1: .*exp\.yaml changed since the run started \(\d+ differences, stored → file\)/);
    assert.match(line, /trials: 2 → 3/);
    assert.match(line, /variants\.fast: \(none\) → \{/);
    assert.match(line, /variants\.baseline\.server\.command\[2\]: …[^;]*--load-ms 50[^;]* → …[^;]*--load-ms 60/);
    assert.match(refused.stderr, /next: .*--resume 1 --use-stored/);
    assert.doesNotMatch(refused.stderr, /SECRET/);
  }

  const resumed = await cli(['run', '--resume', '1', '--use-stored'], { store });
  assert.equal(resumed.code, 0, resumed.stderr);
  assert.match(resumed.stderr, /running the experiment the store kept/);
  assert.doesNotMatch(resumed.stdout + resumed.stderr, /SECRET/);
  const db = new Database(store, { readonly: true });
  t.after(() => db.close());
  // The stored plan ran: two baseline trials, no "fast" variant, the stored server command.
  const trials = db.prepare('SELECT variant FROM trials ORDER BY id').all() as Array<{ variant: string }>;
  assert.deepEqual(
    trials.map((trial) => trial.variant),
    ['baseline', 'baseline'],
  );
  assert.equal((db.prepare('SELECT status FROM runs WHERE id = 1').get() as { status: string }).status, 'done');
  const labels = db.prepare('SELECT label FROM servers WHERE run_id = 1').all() as Array<{ label: string }>;
  assert.ok(labels.length > 0);
}

describe('resume with an edited experiment file', () => {
  test('without secrets: refused with the differences, the stored experiment runs with --use-stored', { timeout: 180_000 }, (t) => scenario(t, false));
  test('with secrets: the same, and --use-stored launches with the real secret', { timeout: 180_000 }, (t) => scenario(t, true));

  test('differences are keyed by path, named list entries by name', () => {
    const before = { trials: 2, variants: [{ name: 'a', env: { X: '1' } }], command: ['serve', '--port', '1'] };
    const after = { trials: 2, variants: [{ name: 'b' }, { name: 'a', env: { X: '2' } }], command: ['serve', '--port', '2'] };
    assert.deepEqual(jsonDifferences(before, after), [
      { key: 'variants.a.env.X', before: '"1"', after: '"2"' },
      { key: 'variants.b', before: '(none)', after: '{"name":"b"}' },
      { key: 'command[2]', before: '"1"', after: '"2"' },
    ]);
    assert.deepEqual(jsonDifferences(before, structuredClone(before)), []);
  });
});
