import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { signalChild } from '../util/child-signal.js';
import { missingProgram } from '../util/program-path.js';
import { gpuSampleOf, parseQueryCsv, queryGpuArgv, SAMPLE_FIELDS } from './nvidia-smi.js';
import type { GpuSample } from './types.js';

/** nvidia-smi's own timestamp first: samples keep their reading time even if the pipe delivers them in bursts. */
export const STREAM_FIELDS = ['timestamp', ...SAMPLE_FIELDS] as const;

export interface GpuStream {
  /** Stop the nvidia-smi process; resolves with why there are no samples, if there are none for a reason. */
  stop(): Promise<string | undefined>;
}

/**
 * One long-lived `nvidia-smi --query-gpu=… -lms N` on this machine (the sampler's own child process): no process
 * start per reading. Each row goes to onSample as it arrives.
 */
export function streamGpuSamples(intervalMs: number, onSample: (sample: GpuSample) => void): GpuStream {
  const [program, ...args] = queryGpuArgv(STREAM_FIELDS);
  if (missingProgram(program!)) return { stop: () => Promise.resolve('nvidia-smi not found') };
  const child = spawn(program!, [...args, '-lms', String(Math.max(1, Math.round(intervalMs)))], { stdio: ['ignore', 'pipe', 'pipe'] });
  let unavailable: string | undefined;
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    if (stderr.length < 4096) stderr += chunk;
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    const row = parseQueryCsv(line, STREAM_FIELDS)[0];
    const sample = row && gpuSampleOf(row, parseLocalTimestamp(row.timestamp) ?? Date.now());
    if (sample) onSample(sample);
  });
  const closed = new Promise<void>((resolve) => {
    child.on('error', (error: NodeJS.ErrnoException) => {
      unavailable = error.code === 'ENOENT' ? 'nvidia-smi not found' : `nvidia-smi failed: ${error.message}`;
      resolve();
    });
    child.on('close', (code, signal) => {
      if (signal === null && code !== 0) unavailable ??= `nvidia-smi failed (exit ${code})${stderr.trim() ? `: ${stderr.trim().split('\n')[0]}` : ''}`;
      resolve();
    });
  });
  return {
    async stop() {
      // SIGKILL: `nvidia-smi -lms` ends on SIGTERM only after its current interval (704 ms of a 1000 ms interval on
      // the H200 host), which every trial paid; it only reads, so nothing is left half-done.
      signalChild(child, 'SIGKILL');
      await closed;
      return unavailable;
    },
  };
}

/** "2026/12/03 06:42:21.776" in this machine's local time → ms since the epoch. */
export function parseLocalTimestamp(text: string | undefined): number | undefined {
  const match = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?$/.exec(text ?? '');
  if (!match) return undefined;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  return new Date(year, month - 1, day, hour, minute, second, Number((match[7] ?? '0').padEnd(3, '0'))).getTime();
}
