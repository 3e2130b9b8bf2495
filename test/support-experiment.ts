/** Shared helpers of the experiment end-to-end tests: temp dirs, experiment files, CLI runs with bounded time. */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { spawnSimulator } from '../src/simulate/child.js';

export const SERVELAB = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));

/** A tiny, fast simulator: ~100 ms load (unless told), a few ms per token, little jitter. */
export function simCommand(options: { tpotMs?: number; loadMs?: number; extra?: string[] } = {}): string[] {
  const tpot = String(options.tpotMs ?? 3);
  const load = String(options.loadMs ?? 100);
  return [
    'node',
    '{servelab}',
    'simulate',
    '--port',
    '{port}',
    '--load-ms',
    load,
    '--tpot-ms',
    tpot,
    '--ttft-ms',
    '5',
    '--jitter',
    '0.02',
    ...(options.extra ?? []),
  ];
}

export function tempDir(t: TestContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `servelab-${prefix}-`));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An experiment file with tiny trials; `overrides` replace top-level keys. */
export function writeExperiment(dir: string, fileName: string, overrides: Record<string, unknown>): string {
  const experiment = {
    name: 'tiny',
    profile: 'simulator',
    // Above the readiness code's 120 s generation-probe timeout so it is never clipped to a fraction of a ms.
    server: { command: simCommand(), readyTimeout: '5m' },
    client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 24, seed: 3 }, warmupRequests: 1 },
    workloads: [{ kind: 'single-stream', requests: 3 }],
    trials: 4,
    seed: 11,
    variants: { baseline: {} },
    ...overrides,
  };
  const path = join(dir, fileName);
  writeFileSync(path, stringify(experiment));
  return path;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Run `servelab ARGS` to completion (killed after timeoutMs). */
export function cli(args: string[], options: { store: string; timeoutMs?: number }): Promise<CliResult> {
  // The tests decide NCCL_* themselves; whatever the developer's shell has must not leak into the servers.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('NCCL_')));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [SERVELAB, ...args], {
      env: { ...env, SERVELAB_STORE: options.store },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 90_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * `servelab simulate --load-ms 0 FLAGS` in its own process (its step timers do not share the client's event loop),
 * stopped after the test; resolves with its URL once it serves.
 */
export async function servingSimulator(t: TestContext, flags: string[]): Promise<string> {
  const sim = await spawnSimulator(['--load-ms', '0', ...flags]);
  t.after(() => sim.stop());
  await sim.waitForLine(/Uvicorn running on http:/, 15_000);
  return sim.url;
}

/**
 * SIGKILL the server watchdogs (src/launch/watchdog.ts) of launcher `pid`, as when the runner and its watchdogs die
 * together (OOM killer, `kill -9 -1`): its servers then outlive it and only a resume can stop them. Returns how many.
 */
export function killWatchdogs(pid: number): number {
  let killed = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    // sh -c GUARD servelab-watchdog LAUNCHER_PID GRACE COMMAND…: the subshell the guard forked (the guard itself has
    // exec'd the server by then).
    const at = argv.indexOf('servelab-watchdog');
    if (at < 0 || argv[at + 1] !== String(pid)) continue;
    try {
      process.kill(Number(entry), 'SIGKILL');
      killed += 1;
    } catch {
      // gone already
    }
  }
  return killed;
}
