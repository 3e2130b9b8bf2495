import type { GpuProcess, GpuSample } from './types.js';

/**
 * Parsers of nvidia-smi's machine-readable outputs. Pure: the sampler, preflight and fingerprint run the commands
 * (through a CommandRunner, so on the executor's host) and hand the text here.
 */

/** Fields the sampler asks for each interval: the state that moves a trial's numbers. */
export const SAMPLE_FIELDS = [
  'index',
  'clocks.sm',
  'clocks.mem',
  'clocks.max.sm',
  'power.draw',
  'enforced.power.limit',
  'temperature.gpu',
  'utilization.gpu',
  'memory.used',
  'memory.total',
  'clocks_event_reasons.active',
] as const;

/** Settings preflight checks once before a server starts, on top of a sample. */
export const PREFLIGHT_FIELDS = [...SAMPLE_FIELDS, 'uuid', 'persistence_mode', 'power.default_limit', 'clocks.applications.graphics'] as const;

export const COMPUTE_APPS_FIELDS = ['pid', 'process_name', 'used_memory', 'gpu_uuid'] as const;

/** `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits [-lms N]` for the given fields. */
export function queryGpuArgv(fields: readonly string[]): string[] {
  return ['nvidia-smi', `--query-gpu=${fields.join(',')}`, '--format=csv,noheader,nounits'];
}

export function queryComputeAppsArgv(): string[] {
  return ['nvidia-smi', `--query-compute-apps=${COMPUTE_APPS_FIELDS.join(',')}`, '--format=csv,noheader,nounits'];
}

export type QueryRow = Record<string, string>;

/**
 * Rows of `--format=csv,noheader,nounits` output, keyed by the queried field names. Lines with another cell count
 * (warnings nvidia-smi mixes in) are skipped; cells nvidia-smi cannot read ("[N/A]", "[Not Supported]") are left out.
 * Names, the only cells that could hold a comma, are never queried by the sampler.
 */
export function parseQueryCsv(text: string, fields: readonly string[]): QueryRow[] {
  const rows: QueryRow[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const cells = line.split(',').map((cell) => cell.trim());
    if (cells.length !== fields.length) continue;
    const row: QueryRow = {};
    fields.forEach((field, position) => {
      const cell = cells[position]!;
      if (!/^\[.*\]$/.test(cell) && cell !== '') row[field] = cell;
    });
    rows.push(row);
  }
  return rows;
}

/** Field names of a `--format=csv` header line: "clocks.current.sm [MHz]" → "clocks.current.sm". */
export function parseCsvHeader(line: string): string[] {
  return line.split(',').map((cell) => cell.trim().replace(/\s*\[.*\]$/, ''));
}

/** nvidia-smi accepts several names for one field; the header of `--format=csv` prints the long one. */
const ALIASES: Record<string, readonly string[]> = {
  smClockMHz: ['clocks.sm', 'clocks.current.sm'],
  memClockMHz: ['clocks.mem', 'clocks.current.memory'],
  maxSmClockMHz: ['clocks.max.sm'],
  powerW: ['power.draw'],
  // The enforced limit is what the GPU obeys; the requested one only when the driver cannot tell.
  powerLimitW: ['enforced.power.limit', 'power.limit'],
  temperatureC: ['temperature.gpu'],
  utilizationPct: ['utilization.gpu'],
  memoryUsedMiB: ['memory.used'],
  memoryTotalMiB: ['memory.total'],
};

/** A GPU sample from a query row; undefined when the row has no GPU index. */
export function gpuSampleOf(row: QueryRow, at: number): GpuSample | undefined {
  const index = numberCell(row.index);
  if (index === undefined || !Number.isInteger(index)) return undefined;
  const sample: GpuSample = { at, index };
  for (const [key, names] of Object.entries(ALIASES) as Array<[keyof typeof ALIASES, readonly string[]]>) {
    const value = names.map((name) => numberCell(row[name])).find((candidate) => candidate !== undefined);
    if (value !== undefined) (sample as unknown as Record<string, number>)[key] = value;
  }
  const mask = row['clocks_event_reasons.active'] ?? row['clocks_throttle_reasons.active'];
  if (mask !== undefined && /^0x[0-9a-f]+$/i.test(mask)) sample.reasons = clockEventReasons(BigInt(mask));
  return sample;
}

/** Bits of nvmlClocksEventReasons (nvml.h), as nvidia-smi -q names them. */
const REASON_BITS: ReadonlyArray<[bigint, string]> = [
  [0x1n, 'idle'],
  [0x2n, 'applications clocks setting'],
  [0x4n, 'SW power cap'],
  [0x8n, 'HW slowdown'],
  [0x10n, 'sync boost'],
  [0x20n, 'SW thermal slowdown'],
  [0x40n, 'HW thermal slowdown'],
  [0x80n, 'HW power brake slowdown'],
  [0x100n, 'display clock setting'],
];

export function clockEventReasons(mask: bigint): string[] {
  return REASON_BITS.filter(([bit]) => (mask & bit) !== 0n).map(([, name]) => name);
}

/** Rows of `--query-compute-apps=pid,process_name,used_memory,gpu_uuid`; a process name may contain commas. */
export function parseComputeApps(text: string): GpuProcess[] {
  const processes: GpuProcess[] = [];
  for (const line of text.split('\n')) {
    const cells = line.split(',').map((cell) => cell.trim());
    if (cells.length < 4) continue;
    const pid = numberCell(cells[0]!);
    if (pid === undefined) continue;
    const gpuUuid = cells.at(-1)!;
    const used = numberCell(cells.at(-2)!);
    const process: GpuProcess = { pid, name: cells.slice(1, -2).join(', '), gpuUuid };
    if (used !== undefined) process.usedMiB = used;
    processes.push(process);
  }
  return processes;
}

export function numberCell(cell: string | undefined): number | undefined {
  if (cell === undefined || !/^-?\d+(\.\d+)?$/.test(cell)) return undefined;
  return Number(cell);
}
