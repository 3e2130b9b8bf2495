import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { signalChild } from '../util/child-signal.js';

/** bin/servelab.js, found from this module's place in dist/src/simulate/. */
export const SERVELAB_BIN = fileURLToPath(new URL('../../../bin/servelab.js', import.meta.url));

// The engine personalities announce the URL before they listen: they refuse connections while loading.
const LISTENING_LINE = /servelab simulator (?:listening|\(\w+ personality\) will listen) on (http:\/\/\S+?);/;

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** `servelab simulate` running as a child process, as a real inference server would. */
export interface SimulatorProcess {
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr, interleaved as received). */
  output(): string;
  /** Resolves with the first output line matching `pattern` (already printed or future); rejects on exit or timeout. */
  waitForLine(pattern: RegExp, timeoutMs: number): Promise<string>;
  exited: Promise<ProcessExit>;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  stop(graceMs?: number): Promise<ProcessExit>;
}

/**
 * Spawn `node bin/servelab.js simulate ...args` and resolve once it printed its URL (it is then still loading:
 * wait for /health or for the Uvicorn line). Rejects with its output if it exits or stays silent for `timeoutMs`.
 */
export async function spawnSimulator(
  args: string[] = [],
  options: { env?: NodeJS.ProcessEnv; timeoutMs?: number /** Command the simulator runs under, e.g. `taskset -c 8-15`. */; prefix?: string[] } = {},
): Promise<SimulatorProcess> {
  const [command, ...prefixArgs] = [...(options.prefix ?? []), process.execPath];
  const child = spawn(command!, [...prefixArgs, SERVELAB_BIN, 'simulate', ...args], {
    env: options.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    output += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  /** Set once the process exited and its pipes drained, so output() holds its last lines (e.g. a traceback). */
  let finished: ProcessExit | undefined;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('close', (code, signal) => {
      finished = { code, signal };
      resolve(finished);
      for (const listener of listeners) listener();
    });
  });

  const waitForLine = (pattern: RegExp, timeoutMs: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const line = output.split('\n').find((candidate) => pattern.test(candidate));
        if (line !== undefined) return settle(() => resolve(line));
        if (finished) {
          const how = finished.signal ?? `code ${finished.code}`;
          settle(() => reject(new Error(`simulator exited (${how}) before printing ${pattern}:\n${output}`)));
        }
      };
      const timer = setTimeout(() => settle(() => reject(new Error(`simulator printed no ${pattern} within ${timeoutMs} ms:\n${output}`))), timeoutMs);
      const settle = (action: () => void): void => {
        clearTimeout(timer);
        listeners.delete(check);
        action();
      };
      listeners.add(check);
      check();
    });

  const stop = async (graceMs = 3000): Promise<ProcessExit> => {
    if (!finished) {
      signalChild(child, 'SIGTERM');
      const killer = setTimeout(() => signalChild(child, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(killer);
    }
    return exited;
  };

  try {
    const line = await waitForLine(LISTENING_LINE, options.timeoutMs ?? 30_000);
    const url = LISTENING_LINE.exec(line)![1]!;
    return { url, port: Number(new URL(url).port), child, output: () => output, waitForLine, exited, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
