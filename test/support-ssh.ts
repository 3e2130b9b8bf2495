/** Shared by the SSH executor tests: the CI sshd, the servelab binary, and a look at this machine's processes. */

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readProcNetTcp } from '../src/launch/port-owner.js';
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

/**
 * Drop this test process's connections to the test sshd: kill the sshd sessions (children of the listener) whose TCP
 * peer is an ssh client descending from this process. Only ours: SSH test files run side by side, and dropping
 * another file's connections made its trials invalid twice or its launch fail before it logged.
 */
export function killSshdSessions(): number {
  const listener = Number(readFileSync(join(CI_DIR, 'ssh', 'sshd.pid'), 'utf8').trim());
  const table = processTable();
  const tcp = tcpByInode();
  const connections = (pid: number) => socketInodes(pid).flatMap((inode) => tcp.get(inode) ?? []);
  const clients = descendants(table, process.pid).filter((entry) => /^ssh /.test(entry.cmdline));
  // A client's (local, remote) port pair is the session's (remote, local).
  const ours = new Set(clients.flatMap((entry) => connections(entry.pid).map((connection) => `${connection.remote}:${connection.local}`)));
  const sessions = table
    .filter((entry) => entry.ppid === listener && connections(entry.pid).some((connection) => ours.has(`${connection.local}:${connection.remote}`)))
    .map((entry) => entry.pid);
  for (const pid of sessions) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return sessions.length;
}

function descendants(table: ReturnType<typeof processTable>, root: number): ReturnType<typeof processTable> {
  const found = new Set([root]);
  // The table is in pid order, and a child may have a lower pid than its parent once pids wrap: repeat to a fixpoint.
  for (let size = 0; size !== found.size; ) {
    size = found.size;
    for (const entry of table) if (found.has(entry.ppid)) found.add(entry.pid);
  }
  return table.filter((entry) => entry.pid !== root && found.has(entry.pid));
}

/** Socket inodes a process holds, from /proc/PID/fd; none once it has exited. */
function socketInodes(pid: number): string[] {
  try {
    return readdirSync(`/proc/${pid}/fd`).flatMap((fd) => {
      try {
        return /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1] ?? [];
      } catch {
        return [];
      }
    });
  } catch {
    return [];
  }
}

/** TCP connections (IPv4 and IPv6) by socket inode: local and remote port. */
function tcpByInode(): Map<string, { local: number; remote: number }> {
  const connections = new Map<string, { local: number; remote: number }>();
  const port = (address: string) => Number.parseInt(address.slice(address.lastIndexOf(':') + 1), 16);
  for (const line of (readProcNetTcp() ?? '').split('\n')) {
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    const fields = line.trim().split(/\s+/);
    if (fields.length < 10 || fields[0] === 'sl') continue;
    connections.set(fields[9]!, { local: port(fields[1]!), remote: port(fields[2]!) });
  }
  return connections;
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
