/**
 * Ready latency: how long after a server becomes able to serve does servelab report it ready?
 *
 *   node dist/bench/ready-latency.js [--trials 12] [--shell-sleep 0.5]
 *
 * The server is the built-in simulator with a random load time (1-2 s, so readiness falls at a random point
 * of the poll schedule). "Able to serve" is the moment the simulator prints its ready block ("Started server
 * process" ... "Uvicorn running"; it flips to ready in the same tick); "reported" is the moment servelab's JSON result line arrives. Both are read as
 * epoch time with sub-millisecond resolution (performance.timeOrigin + now), on the same host clock.
 *
 * Three contenders:
 *   wait    `servelab wait URL --json` — HTTP polling only (health + /v1/models + a 1-token generation)
 *   launch  `servelab launch --json --exit-when-ready -- <sim>` — polling plus a probe on every log phase
 *   shell   `until curl -s URL/health | grep -q ok; do sleep S; done` — the loop it replaces, with sleep S
 *           instead of 10 to keep the bench short; its figure for sleep 10 is the measurement scaled by 10/S
 *           (the wait is uniform over one sleep period, so it scales linearly with the period).
 *
 * Smoke setting (CI, test/bench-smoke.test.ts): --trials 1 --shell-sleep 0.2. The shell loop needs curl.
 *
 * Process start-up is outside the measurement: `wait` and the shell loop are polling before the simulator starts
 * (a free port is picked first), and `launch` starts the simulator itself.
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/launch/port.js';
import { benchFlags, benchMain, noFigure, positiveInt, positiveNumber } from './support/main.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
// The first line of the simulator's ready block; it flips to ready right after the block, so timing from here
// slightly over-states servelab's latency rather than flattering it.
const READY_LINE = /Started server process/;
const now = () => performance.timeOrigin + performance.now();

function simArgs(loadMs: number): string[] {
  return [BIN, 'simulate', '--load-ms', String(loadMs), '--jitter', '0', '--ttft-ms', '1', '--tpot-ms', '1'];
}

/** Spawn a command; `onLine` sees each stdout line with its arrival time, `onErrLine` each stderr line. */
function run(
  argv: string[],
  onLine: (line: string, at: number) => void,
  onErrLine?: (line: string) => void,
): { done: Promise<number | null>; kill: () => void } {
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', onErrLine ? 'pipe' : 'ignore'] });
  createInterface({ input: child.stdout! }).on('line', (line) => onLine(line, now()));
  if (onErrLine) createInterface({ input: child.stderr! }).on('line', onErrLine);
  const done = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { done, kill: () => child.kill('SIGTERM') };
}

/** Start the simulator on `port`; resolves with a promise of the moment it became ready and a stop function. */
function startSim(loadMs: number, port: number): { readyAt: Promise<number>; stop: () => Promise<unknown> } {
  let resolveReady!: (at: number) => void;
  const readyAt = new Promise<number>((resolve) => (resolveReady = resolve));
  const sim = run([process.execPath, ...simArgs(loadMs), '--port', String(port)], (line, at) => {
    if (READY_LINE.test(line)) resolveReady(at);
  });
  return {
    readyAt,
    stop: () => {
      sim.kill();
      return sim.done;
    },
  };
}

/** The CLI is started first and polls a port where nothing listens yet, so its own start-up is not measured. */
async function trialWait(store: string, loadMs: number): Promise<number> {
  const port = await freePort('127.0.0.1');
  let reportedAt = NaN;
  let polling!: () => void;
  const isPolling = new Promise<void>((resolve) => (polling = resolve));
  const waiter = run(
    [process.execPath, BIN, 'wait', `http://127.0.0.1:${port}`, '--json', '--profile', 'simulator', '--store', store],
    (line, at) => {
      if (line.startsWith('{')) reportedAt = at;
    },
    (line) => /waiting for server/.test(line) && polling(),
  );
  await isPolling;
  const sim = startSim(loadMs, port);
  const code = await waiter.done;
  const readyAt = await sim.readyAt;
  await sim.stop();
  if (code !== 0 || Number.isNaN(reportedAt))
    throw noFigure(`servelab wait exited with ${code}${code === 0 ? ' without its JSON result line' : ''}`, WAIT_NEXT);
  return reportedAt - readyAt;
}

async function trialLaunch(dir: string, store: string, loadMs: number, index: number): Promise<number> {
  const mark = join(dir, `ready-${index}.txt`);
  let reportedAt = NaN;
  const launcher = run(
    [
      process.execPath,
      BIN,
      'launch',
      '--json',
      '--exit-when-ready',
      '--profile',
      'simulator',
      '--store',
      store,
      '--log',
      join(dir, `launch-${index}.log`),
      '--',
      process.execPath,
      SELF,
      '--wrap-sim',
      String(loadMs),
      mark,
      '{port}',
    ],
    (line, at) => {
      if (line.startsWith('{')) reportedAt = at;
    },
  );
  const code = await launcher.done;
  if (code !== 0 || Number.isNaN(reportedAt))
    throw noFigure(`servelab launch exited with ${code}${code === 0 ? ' without its JSON result line' : ''}`, WAIT_NEXT);
  return reportedAt - Number(readFileSync(mark, 'utf8'));
}

async function trialShell(loadMs: number, sleepS: number): Promise<number> {
  const port = await freePort('127.0.0.1');
  let reportedAt = NaN;
  const loop = `until curl -s http://127.0.0.1:${port}/health | grep -q ok; do sleep ${sleepS}; done; echo READY`;
  const shell = run(['sh', '-c', loop], (line, at) => {
    if (line === 'READY') reportedAt = at;
  });
  const sim = startSim(loadMs, port);
  await shell.done;
  const readyAt = await sim.readyAt;
  await sim.stop();
  return reportedAt - readyAt;
}

/**
 * `--wrap-sim LOAD_MS MARK_FILE PORT`: run the simulator as launch's server, passing its output through to the log,
 * and note the epoch time of its ready line in MARK_FILE (launch owns the log, so the bench cannot read it first).
 */
async function wrapSim(loadMs: number, markFile: string, port: string): Promise<void> {
  const sim = run([process.execPath, ...simArgs(loadMs), '--port', port], (line, at) => {
    if (READY_LINE.test(line)) appendFileSync(markFile, String(at));
    process.stdout.write(`${line}\n`);
  });
  const stop = () => sim.kill();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  process.exitCode = (await sim.done) ?? 0;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function summary(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  return `median ${median(values).toFixed(1)} ms  (min ${sorted[0]!.toFixed(1)}, max ${sorted.at(-1)!.toFixed(1)}, n=${values.length})`;
}

const WAIT_NEXT = 'run the same command by hand (node bin/servelab.js wait/launch … against `servelab simulate`) to see why';

/** The shell loop is the contender: without curl it would poll forever instead of measuring anything. */
function requireCurl(): void {
  if (spawnSync('curl', ['--version'], { stdio: 'ignore' }).error) {
    throw noFigure(
      'curl is not on the PATH: the shell loop this bench compares with (until curl … | grep -q ok) cannot run',
      'install curl (apt-get install curl)',
    );
  }
}

async function measure(): Promise<void> {
  const flags = benchFlags('ready-latency', { options: { trials: { type: 'string', default: '12' }, 'shell-sleep': { type: 'string', default: '0.5' } } });
  const trials = positiveInt('--trials', flags.trials);
  const sleepS = positiveNumber('--shell-sleep', flags['shell-sleep']);
  requireCurl();
  const dir = mkdtempSync(join(tmpdir(), 'servelab-ready-bench-'));
  const store = join(dir, 'store.db');
  const loadTimes = Array.from({ length: trials }, () => 1000 + Math.round(Math.random() * 1000));
  try {
    const wait: number[] = [];
    const launch: number[] = [];
    const shell: number[] = [];
    for (const [index, loadMs] of loadTimes.entries()) {
      launch.push(await trialLaunch(dir, store, loadMs, index));
      wait.push(await trialWait(store, loadMs));
      shell.push(await trialShell(loadMs, sleepS));
      process.stderr.write(
        `trial ${index + 1}/${trials}: launch ${launch.at(-1)!.toFixed(1)} ms, wait ${wait.at(-1)!.toFixed(1)} ms, shell(sleep ${sleepS}) ${shell.at(-1)!.toFixed(0)} ms\n`,
      );
    }
    const shellScaled = median(shell) * (10 / sleepS);
    process.stdout.write(
      `${[
        'ready latency = time from the server being able to serve to the ready report',
        `host: ${availableParallelism()} cores, load average ${loadavg()
          .map((value) => value.toFixed(1))
          .join(' ')} (other work inflates every figure)`,
        `servelab wait   (health+models+generation): ${summary(wait)}`,
        `servelab launch (polling + log phases):     ${summary(launch)}`,
        `shell loop, sleep ${sleepS}:                     ${summary(shell)}`,
        `shell loop, sleep 10 (scaled x${(10 / sleepS).toFixed(0)}):        median ${shellScaled.toFixed(0)} ms (expected ~5000 ms: half the 10 s period)`,
        `goal: <= 100 ms median -> wait ${median(wait) <= 100 ? 'MET' : 'MISSED'}, launch ${median(launch) <= 100 ? 'MET' : 'MISSED'}`,
        `ratio shell(sleep 10) / servelab wait: ${(shellScaled / median(wait)).toFixed(0)}x; / launch: ${(shellScaled / median(launch)).toFixed(0)}x`,
      ].join('\n')}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// `--wrap-sim` is this script run as launch's server (see wrapSim), not a bench.
if (process.argv[2] === '--wrap-sim') await wrapSim(Number(process.argv[3]), process.argv[4]!, process.argv[5]!);
else benchMain('ready-latency', measure);
