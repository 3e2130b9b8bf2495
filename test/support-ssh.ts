/** Shared by the SSH executor tests: the CI sshd, the servelab binary, and a look at this machine's processes. */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Db, openStore } from '../src/store/db.js';
import { writeExperiment } from './support-experiment.js';
import { CI_DIR, ciSshd } from './support-services.js';
import { waitFor } from './support-wait.js';

export const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));

/** A model name unique to one test: finds that test's server processes on the "host" (this machine). */
export function uniqueModel(): string {
  return `ssh-test-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}

/** Every process as pid, parent pid and command line, from /proc (slim CI images have no procps/pgrep). */
export function processTable(): Array<{ pid: number; ppid: number; cmdline: string }> {
  const table = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Field 4 (ppid) follows the command name, which is in parentheses and may contain spaces.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      table.push({ pid: Number(entry), ppid, cmdline });
    } catch {
      // exited while we looked
    }
  }
  return table;
}

/** Pids of processes whose command line contains `token`. */
export function processesWith(token: string): number[] {
  return processTable()
    .filter((entry) => entry.cmdline.includes(token) && entry.pid !== process.pid)
    .map((entry) => entry.pid);
}

/** Drop every connection to the test sshd: kill its per-connection processes (children of the listener). */
export function killSshdSessions(): number {
  const listener = readFileSync(join(CI_DIR, 'ssh', 'sshd.pid'), 'utf8').trim();
  const children = processTable()
    .filter((entry) => entry.ppid === Number(listener))
    .map((entry) => entry.pid);
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return children.length;
}

let ci: ReturnType<typeof ciSshd> | undefined;

/**
 * A temp dir, a model name unique to the test (its server processes are found and killed by it), the simulator's
 * command with that model, and an ssh executor section for the CI sshd whose remote dir is in the temp dir.
 */
export function sshRunSetup(t: TestContext, speed: { loadMs: number; tpotMs: number }) {
  const sshd = (ci ??= ciSshd()).sshd!;
  const dir = mkdtempSync(join(tmpdir(), 'servelab-ssh-run-'));
  const model = uniqueModel();
  t.after(() => {
    for (const pid of processesWith(model)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const timing = ['--load-ms', String(speed.loadMs), '--jitter', '0', '--ttft-ms', '1', '--tpot-ms', String(speed.tpotMs)];
  const command = [process.execPath, BIN, 'simulate', '--port', '{port}', '--model', model, ...timing];
  const executor = {
    kind: 'ssh',
    host: sshd.host,
    port: sshd.port,
    identityFile: sshd.identityFile,
    sshOptions: [`UserKnownHostsFile=${sshd.knownHosts}`],
    remoteDir: join(dir, 'remote'),
    client: 'local',
  };
  return { dir, model, command, executor };
}

export interface SshRun {
  db: Db;
  store: string;
  experiment: string;
  model: string;
  exited: Promise<number | null>;
  /** Resolves once the first trial has measured a request. */
  trialInFlight: () => Promise<void>;
  killRunner: () => void;
  stderr: () => string;
  stdout: () => string;
}

/** `servelab run` of a small ssh experiment in the background, with its store and the server's model name. */
export async function startSshRun(t: TestContext, name: string, trials: number): Promise<SshRun> {
  // Trials of ~2 s (6 requests × 40 tokens × 8 ms): long enough to break one in the middle.
  const { dir, model, command, executor } = sshRunSetup(t, { loadMs: 200, tpotMs: 8 });
  const experiment = writeExperiment(dir, 'exp.yaml', {
    name,
    server: { command, readyTimeout: '120s' },
    executor,
    client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens: 40, seed: 1 }, warmupRequests: 1 },
    workloads: [{ kind: 'single-stream', requests: 6 }],
    trials,
    variants: { base: {} },
  });
  const store = join(dir, 'store.db');
  const child = spawn(process.execPath, [BIN, 'run', experiment, '--store', store, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => child.kill('SIGKILL'));
  let stderr = '';
  let stdout = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.ok(await waitFor(() => existsSync(store), 60_000), 'store created');
  const db: Db = openStore(store, { readonly: true });
  t.after(() => db.close());
  /** Resolves once the first trial has measured a request. */
  const trialInFlight = async () => {
    const inFlight = () => {
      try {
        return ((db.prepare('SELECT completed FROM progress').get() as { completed: number } | undefined)?.completed ?? 0) >= 1;
      } catch {
        return false; // schema not there yet
      }
    };
    assert.ok(await waitFor(inFlight, 90_000), `no trial started:\n${stderr}`);
  };
  return { db, store, experiment, model, exited, trialInFlight, killRunner: () => void child.kill('SIGKILL'), stderr: () => stderr, stdout: () => stdout };
}
