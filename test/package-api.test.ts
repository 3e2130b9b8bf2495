/**
 * The published package, as a user gets it: `npm pack` the built tree, unpack the tarball into a temp project's
 * node_modules (dependencies linked from this checkout's node_modules: no network), then type-check and run
 * the README's library example against it through `import 'servelab'`.
 */

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** execFileSync whose failure shows what the command printed (tsc reports type errors on stdout). */
function run(file: string, args: string[], cwd: string): string {
  try {
    return execFileSync(file, args, { cwd, encoding: 'utf8', timeout: 60_000, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${[file, ...args].join(' ')} failed:\n${stdout}${stderr}`);
  }
}

test('npm pack → import "servelab" in a fresh project: types resolve and the library example runs', { timeout: 120_000 }, (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-pack-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));

  // The tree is already built (npm test builds first), so skip the prepack rebuild.
  const packed = JSON.parse(run(NPM, ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], ROOT)) as { filename: string }[];
  const tarball = join(dir, packed[0]!.filename);

  const project = join(dir, 'project');
  const installed = join(project, 'node_modules', 'servelab');
  mkdirSync(installed, { recursive: true });
  run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'], dir);
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const name of [...Object.keys(manifest.dependencies), '@types/node']) {
    mkdirSync(join(project, 'node_modules', name, '..'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', name), join(project, 'node_modules', name), 'dir');
  }
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  copyFileSync(join(ROOT, 'examples', 'library', 'bench-simulator.ts'), join(project, 'main.ts'));

  // Type-check the example against the package's exported .d.ts files, compile it, run it.
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const flags = [
    '--module',
    'nodenext',
    '--moduleResolution',
    'nodenext',
    '--target',
    'es2022',
    '--strict',
    '--noUncheckedIndexedAccess',
    '--types',
    'node',
    '--skipLibCheck',
    'false',
  ];
  run(process.execPath, [tsc, ...flags, 'main.ts'], project);
  const output = run(process.execPath, ['main.js'], project);
  assert.match(output, /^ready after \d+ ms; 4 requests, \d+\.\d tok\/s$/m);

  // Every building block the README names is there at runtime.
  const api = run(process.execPath, ['--input-type=module', '-e', "console.log(Object.keys(await import('servelab')).join(' '))"], project);
  for (const name of [
    'launchServer',
    'waitForReady',
    'runBenchmark',
    'runExperiment',
    'loadExperiment',
    'openStore',
    'listRuns',
    'getRun',
    'listTrials',
    'writeReports',
  ]) {
    assert.ok(api.split(/\s+/).includes(name), `servelab exports ${name}`);
  }
});
