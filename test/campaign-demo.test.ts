import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from './support-experiment.js';

const SCRIPT = fileURLToPath(new URL('../../examples/eagle3-sglang-campaign/run.sh', import.meta.url));

/** Run the demo script (scaled down) to completion; killed after timeoutMs. */
function runDemo(out: string, timeoutMs: number): Promise<{ code: number | null; output: string }> {
  // The demo decides NCCL_* itself; the developer's shell must not leak any in.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NCCL_') && name !== 'SERVELAB_STORE'));
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [SCRIPT, out], { env: { ...env, DEMO_QUICK: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** The cells of a variant's row in the speculative-decoding view of a run's output. */
function specRow(log: string, variant: string): string[] {
  const view = log.slice(log.indexOf('speculative decoding (medians over trials):'));
  const line = view.split('\n').find((candidate) => candidate.startsWith(`${variant} `));
  assert.ok(line, `no spec-view row for ${variant} in:\n${view}`);
  return line.trim().split(/\s+/);
}

test('the EAGLE-3 campaign demo: reference run, lost NCCL tuning stopped by name, race to the best config', async (t) => {
  const out = tempDir(t, 'campaign-demo');
  const { code, output } = await runDemo(out, 150_000);
  assert.equal(code, 0, output);
  const log = (name: string): string => readFileSync(join(out, name), 'utf8');

  // (a) the reference: both configs measured with the tuning, the EAGLE-3 one with its verify-step time.
  assert.match(log('a.log'), /run 1 done/);
  const tunedStep = Number(specRow(log('a.log'), 'eagle3-s3-d4')[7]);
  assert.ok(tunedStep > 0, `verify step ms ${tunedStep}`);

  // (b) after the "reboot": stopped before any trial, every lost NCCL variable named.
  const stopped = log('b.log');
  assert.match(stopped, /differs from run 1 .*: .*; nothing was measured/);
  for (const name of ['NCCL_PROTO LL', 'NCCL_ALGO Ring', 'NCCL_P2P_LEVEL SYS', 'NCCL_MAX_NCHANNELS 16', 'NCCL_BUFFSIZE 8388608', 'NCCL_NTHREADS 512'])
    assert.match(stopped, new RegExp(`${name} → \\(unset\\)`));
  assert.doesNotMatch(stopped, /trial 1\//);
  // Measured anyway (scratch store): the untuned verify pass is slower, as the simulator's NCCL model says (1.41x).
  const untunedStep = Number(specRow(log('b-measured.log'), 'eagle3-s3-d4')[7]);
  assert.ok(untunedStep > tunedStep * 1.1, `verify step ${untunedStep} ms untuned vs ${tunedStep} ms tuned`);
  // Which of them: the quick demo only plans the bisect (test/bisect.test.ts measures one); all six are settable.
  assert.match(log('bisect.log'), /differences it sets \(6\)/);
  assert.match(log('bisect.log'), /round 1: a screening design, each difference restored in half of 16 configurations × 2 trials/);

  // (c) tuning restored: the guard lets the race through; a best config with its CIs, an A/A row, verify steps.
  const race = log('c.log');
  assert.doesNotMatch(race, /differs from/);
  assert.match(race, /^baseline-aa +single-stream .*\b(no significant difference|faster|slower)$/m);
  assert.match(race, /^eagle3-s\d-d\d (is the best config|ranks first)/m);
  assert.match(race, /^ {2}vs the baseline \(baseline\): [+−][\d.]+% \(CI /m);
  assert.match(race, /^ {2}vs the runner-up \(\S+\): [+−][\d.]+% \(CI /m);
  for (const variant of ['eagle3-s1-d3', 'eagle3-s2-d3']) assert.ok(Number(specRow(race, variant)[7]) > 0, variant);
  assert.equal(specRow(race, 'baseline')[7], '-');

  const html = readFileSync(join(out, 'report', 'run-3.html'), 'utf8');
  assert.match(html, /verify step ms/);
  assert.match(html, /eagle3-s2-d3/);
  assert.ok(existsSync(join(out, 'servelab.db')));
  assert.match(output, /demo wall time: \d+ s/);
});
