import type { Fingerprint } from './types.js';

type Gpu = Fingerprint['gpus'][number];

/** Fields in the order of NVIDIA_SMI_QUERY; collect.ts builds the command from it. */
export const NVIDIA_SMI_FIELDS = [
  'index',
  'name',
  'driver_version',
  'memory.total',
  'clocks.sm',
  'clocks.max.sm',
  'power.limit',
  'pci.bus_id',
  'persistence_mode',
  'clocks.max.memory',
] as const;

/**
 * Rows of `nvidia-smi --query-gpu=<NVIDIA_SMI_FIELDS> --format=csv,noheader,nounits`. Fields nvidia-smi cannot
 * read ("[N/A]", "[Not Supported]") become absent; lines that are not GPU rows (warnings) are skipped.
 */
export function parseNvidiaSmiCsv(text: string): Gpu[] {
  const gpus: Gpu[] = [];
  for (const line of text.split('\n')) {
    const cells = line.split(',').map((cell) => cell.trim());
    if (cells.length !== NVIDIA_SMI_FIELDS.length) continue;
    const [index, name, driver, memory, sm, maxSm, power, busId, persistence, maxMem] = cells as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const gpuIndex = parseNumber(index);
    if (gpuIndex === undefined || !Number.isInteger(gpuIndex)) continue;
    const gpu: Gpu = { index: gpuIndex, name, driver, memoryMiB: parseNumber(memory) ?? 0 };
    const smClock = parseNumber(sm);
    const maxSmClock = parseNumber(maxSm);
    const powerLimit = parseNumber(power);
    if (smClock !== undefined) gpu.smClockMHz = smClock;
    if (maxSmClock !== undefined) gpu.maxSmClockMHz = maxSmClock;
    if (powerLimit !== undefined) gpu.powerLimitW = powerLimit;
    if (!isUnavailable(busId)) gpu.busId = busId;
    if (!isUnavailable(persistence)) gpu.persistenceMode = persistence;
    const maxMemClock = parseNumber(maxMem);
    if (maxMemClock !== undefined) gpu.maxMemClockMHz = maxMemClock;
    gpus.push(gpu);
  }
  return gpus;
}

/** "[N/A]", "[Not Supported]": nvidia-smi could not read the field. */
function isUnavailable(cell: string): boolean {
  return cell === '' || /^\[.*\]$/.test(cell);
}

function parseNumber(cell: string): number | undefined {
  if (!/^-?\d+(\.\d+)?$/.test(cell)) return undefined;
  return Number(cell);
}

/** MemTotal of /proc/meminfo in GiB, one decimal; 0 when absent. */
export function parseMeminfoGiB(text: string): number {
  const match = /^MemTotal:\s+(\d+)\s*kB/im.exec(text);
  return match ? bytesToGiB(Number(match[1]) * 1024) : 0;
}

export function bytesToGiB(bytes: number): number {
  return Math.round((bytes / 1024 ** 3) * 10) / 10;
}

/**
 * CPU model from /proc/cpuinfo: "model name" on x86; ARM kernels often have none, so fall back to "Hardware" or
 * "Model", then "CPU implementer/part" as a last resort. Empty when nothing is known.
 */
export function parseCpuModel(text: string): string {
  const field = (name: string): string | undefined => new RegExp(`^${name}\\s*:\\s*(.+)$`, 'im').exec(text)?.[1]?.trim();
  const named = field('model name') ?? field('Hardware') ?? field('Model');
  if (named) return named.replace(/\s+/g, ' ');
  const implementer = field('CPU implementer');
  const part = field('CPU part');
  return implementer && part ? `implementer ${implementer} part ${part}` : '';
}

/** Lines `name==version` printed by the package probe; anything else is ignored. */
export function parsePackageVersions(text: string): Record<string, string> {
  const packages: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z0-9_.-]+)==(\S+)$/.exec(line.trim());
    if (match) packages[match[1]!] = match[2]!;
  }
  return packages;
}

/**
 * The version of a `--version` output: llama.cpp's build number first ("version: 3600 (2fb92678)", whose next line
 * "built with cc (GCC) 12.2.0" must not win), else the first version-looking token ("0.3.12").
 */
export function parseVersionOutput(text: string): string | undefined {
  return (
    /\bversion:\s*(b?\d+)\s*\(/i.exec(text)?.[1] ?? /\bv?(\d+\.\d+(?:\.\d+)*(?:[-+][\w.]+)?)\b/.exec(text)?.[1] ?? /\bversion:?\s*(b?\d+)\b/i.exec(text)?.[1]
  );
}

/** The commit of a llama.cpp `--version` ("version: 3600 (2fb92678)", "version: 6 (build 6, commit abc1234)"). */
export function parseBuildCommit(text: string): string | undefined {
  return /\bversion:?[^\n(]*\((?:build \d+, )?(?:commit )?([0-9a-f]{7,40})\)/i.exec(text)?.[1];
}

/** The highest versioned libnccl.so.X.Y.Z in a file listing. */
export function parseNcclLibraryVersion(listing: string): string | undefined {
  const versions = [...listing.matchAll(/libnccl\.so\.(\d+\.\d+\.\d+)\b/g)].map((match) => match[1]!);
  const key = (version: string): number => version.split('.').reduce((sum, part) => sum * 1000 + Number(part), 0);
  return versions.sort((a, b) => key(b) - key(a))[0];
}

/** `key=value` lines of the torch probe (cuda.torch, nccl.torch). */
export function parseKeyValueLines(text: string): Record<string, string> {
  const facts: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([\w.]+)=(\S+)$/.exec(line.trim());
    if (match && match[2] !== 'None') facts[match[1]!] = match[2]!;
  }
  return facts;
}

const MODEL_FLAGS = new Set(['--model', '-m', '--model-path', '--model-id']);

/**
 * Model named on a server command line: `--model X`, `--model=X`, `-m X` (llama.cpp), `--model-path X` (SGLang),
 * `--model-id X` (TGI), or the positional of `vllm serve X`. The `-m` of `python -m module` is not a model.
 */
export function modelFromCommand(argv: readonly string[]): string | undefined {
  const program = basename(argv[0] ?? '');
  const isPython = /^python[\d.]*$/.test(program);
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i]!;
    if (isPython && arg === '-m') {
      i++;
      continue;
    }
    const equals = arg.indexOf('=');
    if (equals > 0 && MODEL_FLAGS.has(arg.slice(0, equals))) return arg.slice(equals + 1);
    if (MODEL_FLAGS.has(arg)) {
      const value = argv[i + 1];
      if (value !== undefined && !value.startsWith('-')) return value;
    }
  }
  const serveAt = argv.indexOf('serve');
  if (serveAt >= 0 && argv.slice(0, serveAt).some((arg) => basename(arg) === 'vllm')) {
    const positional = argv[serveAt + 1];
    if (positional !== undefined && !positional.startsWith('-')) return positional;
  }
  return undefined;
}

export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/** `uname -snr` prints "sysname nodename release" in that order whatever the flag order. */
export function parseUname(text: string): { os: string; hostname: string; kernel: string } {
  const [os = '', hostname = '', kernel = ''] = text.trim().split(/\s+/);
  return { os, hostname, kernel };
}
