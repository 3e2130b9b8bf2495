/**
 * `npm test` and `npm run test:fast`: node:test over dist/test/*.test.js with the usual reporter on stdout (its
 * `ℹ skipped N` / `# skipped N` summary is what CI checks), then a recap of every failing test (recap.ts).
 *
 *   node dist/test/runner/run.js [--fast] [FILE... | NAME...]    (NAME: export = dist/test/export.test.js)
 *
 * --fast leaves out the slow files listed in SLOW (the inner loop).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Files left out of `--fast`: those that took ≥ 10 s alone (one file per process, two at a time, as `npm test` runs
 * them) on the 2-core dev box under a load of ~18; they spawn `servelab run`/`launch` with simulators, a browser,
 * sshd or Slurm, or resample heavily. The one end-to-end test per concern lives in these; the runner's permutations
 * run on the fake machine in experiment-permutations (fast). Re-measure when a file moves across the line.
 */
export const SLOW = new Set([
  'bench-smoke',
  'bisect-pair',
  'bisect-rounds',
  'campaign-demo',
  'campaign-plan',
  'campaign-race',
  'conclusion',
  'exec-remote-shell',
  'exec-slurm',
  'exec-ssh',
  'exec-ssh-leftovers',
  'exec-ssh-run',
  'experiment-cache',
  'experiment-drift',
  'experiment-lanes',
  'experiment-lanes-die',
  'experiment-lanes-killed',
  'experiment-lanes-wall',
  'experiment-lease',
  'experiment-log-watch',
  'experiment-resume',
  'experiment-resume-edit',
  'experiment-sessions',
  'experiment-validity',
  'experiment-verdict',
  'export',
  'fingerprint-collect',
  'input-validation',
  'launch-cli',
  'launch-pipeline',
  'launch-server',
  'launch-server-schema',
  'launch-watchdog',
  'load-capacity-cli',
  'search-answer',
  'search-run',
  'search-schedule',
  'search-stopping',
  'search-views',
  'load-cli',
  'load-datasets-sim',
  'load-faults',
  'load-faults-cli',
  'load-frames',
  'load-sessions-cli',
  'load-sim',
  'load-trace-sim',
  'load-workers',
  'package-api',
  'plan-estimate',
  'quality-accuracy',
  'quality-equivalence',
  'ready-machine',
  'ready-wait',
  'report-html',
  'report-model',
  'report-views',
  'security-redaction',
  'security-hostile',
  'security-signals',
  'simulate-cli',
  'simulate-engines',
  'simulate-server',
  'simulate-workers',
  'stats-bootstrap',
  'store-corrupt',
  'store-faults',
  'telemetry-preflight-run',
  'telemetry-sampler',
  'token-counts-run',
  'ui-escape',
  'ui-live',
  'ui-navigation',
  'ui-report-views',
  'warmup-run',
  'work-notes',
]);

const TEST_DIR = fileURLToPath(new URL('..', import.meta.url));

const args = process.argv.slice(2);
const fast = args.includes('--fast');
const named = args.filter((arg) => arg !== '--fast');
// A name is a path, or a test file's short name ("export" → dist/test/export.test.js).
const files =
  named.length > 0
    ? named.map((name) => (name.includes('/') || name.endsWith('.js') ? name : join(TEST_DIR, `${name}.test.js`)))
    : readdirSync(TEST_DIR)
        .filter((name) => name.endsWith('.test.js') && !(fast && SLOW.has(name.slice(0, -'.test.js'.length))))
        .sort()
        .map((name) => join(TEST_DIR, name));

const missing = files.filter((file) => !existsSync(file));
if (missing.length > 0) {
  process.stderr.write(`no such test file: ${missing.join(', ')}\n  next: build (npx tsc -p .) or name a file of ${TEST_DIR}\n`);
  process.exit(2);
}

const recapDir = mkdtempSync(join(tmpdir(), 'servelab-recap-'));
const recapPath = join(recapDir, 'recap.txt');
// node 20 picks spec for a terminal and TAP otherwise; naming a second reporter means naming the first one too.
const reporter = process.stdout.isTTY ? 'spec' : 'tap';
const child = spawn(
  process.execPath,
  [
    '--test',
    '--test-concurrency=2',
    '--test-timeout=180000',
    `--test-reporter=${reporter}`,
    '--test-reporter-destination=stdout',
    `--test-reporter=${fileURLToPath(new URL('recap.js', import.meta.url))}`,
    `--test-reporter-destination=${recapPath}`,
    ...files,
  ],
  // Its own process group: a test that signals its own group (kill(0), a stop of a recorded pid 0) then kills the
  // test processes but not this runner, which says so instead of the whole `npm test` vanishing without a summary.
  { stdio: 'inherit', detached: true },
);
const forward = (signal: NodeJS.Signals) => {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
};
// Ctrl-C reaches this runner only (the tests run in their own group): passed on; the recap is printed once they stop.
process.on('SIGINT', () => forward('SIGINT'));
process.on('SIGTERM', () => forward('SIGTERM'));
process.on('exit', () => {
  if (child.exitCode === null && child.signalCode === null) forward('SIGKILL');
});
const started = Date.now();
child.on('close', (code, signal) => {
  let recap: string;
  try {
    recap = readFileSync(recapPath, 'utf8');
  } catch {
    recap = 'recap: none written (the test runner stopped before its end)\n';
  }
  if (signal) recap = `recap: the test processes were killed by ${signal}; the TAP above ends where they stopped\n${recap}`;
  rmSync(recapDir, { recursive: true, force: true });
  process.stdout.write(`\n${recap}${files.length} files in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  process.exitCode = code ?? (signal ? 1 : 0);
});
