import { execFile } from 'node:child_process';
import { realpath } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { markerSections } from '../util/marker-sections.js';
import { redactor } from '../util/redact.js';
import { VERSION } from '../version.js';
import { captureEnv, DEFAULT_ENV_PATTERNS } from './env.js';
import { parseDriverCudaVersion, parseNvccVersion, parseNvlinkStatus, parseTopology } from './nvidia-smi-text.js';
import {
  basename,
  bytesToGiB,
  modelFromCommand,
  NVIDIA_SMI_FIELDS,
  parseBuildCommit,
  parseCpuModel,
  parseKeyValueLines,
  parseMeminfoGiB,
  parseNcclLibraryVersion,
  parseNvidiaSmiCsv,
  parsePackageVersions,
  parseUname,
  parseVersionOutput,
} from './parse.js';
import type { CommandRunner, Fingerprint } from './types.js';

const COMMAND_TIMEOUT_MS = 20_000;

/** Python distributions whose versions change serving performance. */
const PYTHON_PACKAGES = [
  'vllm',
  'sglang',
  'sgl-kernel',
  'torch',
  'transformers',
  'flashinfer-python',
  'flashinfer',
  'flash-attn',
  'xformers',
  'triton',
  'text-generation-server',
  'llama-cpp-python',
  'tensorrt-llm',
  'tensorrt_llm',
  'nvidia-nccl-cu12',
  'nvidia-nccl-cu13',
  'nvidia-cudnn-cu12',
  'nvidia-cublas-cu12',
];

/** Version of each package, and `name.commit` for one installed from git (PEP 610 direct_url.json vcs_info). */
const PYTHON_PROBE = [
  'import importlib.metadata as m, json',
  `for n in ${JSON.stringify(PYTHON_PACKAGES)}:`,
  '    try: d = m.distribution(n)',
  '    except Exception: continue',
  '    print(n + "==" + d.version)',
  '    try: c = json.loads(d.read_text("direct_url.json") or "{}").get("vcs_info", {}).get("commit_id")',
  '    except Exception: c = None',
  '    if c: print(n + ".commit==" + c)',
].join('\n');

/** The CUDA and NCCL a torch-based server really loads (torch bundles its own NCCL, often not the system one). */
const TORCH_PROBE = [
  'import torch',
  'print("cuda.torch=" + str(torch.version.cuda))',
  'try: v = torch.cuda.nccl.version()',
  'except Exception: v = None',
  'print("nccl.torch=" + (".".join(map(str, v)) if isinstance(v, tuple) else str(v)))',
].join('\n');

/** Importing torch takes seconds on a cold page cache. */
const TORCH_TIMEOUT_MS = 90_000;

const NCCL_LIBRARY_LISTING =
  'ls /usr/lib/x86_64-linux-gnu/libnccl.so.* /usr/lib/aarch64-linux-gnu/libnccl.so.* /usr/lib64/libnccl.so.* /usr/local/cuda/lib64/libnccl.so.* /usr/local/nccl/lib/libnccl.so.* 2>/dev/null; true';

/** Native servers that report their own version: program name → package key. */
const NATIVE_SERVERS: Record<string, string> = {
  'llama-server': 'llama.cpp',
  ollama: 'ollama',
  'text-generation-launcher': 'text-generation-launcher',
};

export interface FingerprintServer {
  /** The server's argv. */
  command: string[];
  /** The server's full environment; only variables matching the capture patterns are kept. */
  env: Record<string, string>;
  /** Model when known; otherwise read from the command line. */
  model?: string;
}

export interface FingerprintOptions {
  envPatterns?: readonly string[];
  /** Secret-name patterns on top of the defaults of util/redact.ts. */
  redactPatterns?: readonly string[];
}

/**
 * Everything about where and how a server runs that can move its numbers. Facts are gathered on the executor's host
 * with short commands; a missing tool (no nvidia-smi, no python) leaves its part empty instead of failing, because a
 * fingerprint must never stop an experiment.
 */
export async function collectFingerprint(executor: CommandRunner, server: FingerprintServer, options: FingerprintOptions = {}): Promise<Fingerprint> {
  return fingerprintOf(await collectMachineFacts(executor, server.command), server, options);
}

/** The facts of a fingerprint that need no running server: host, GPUs, packages and system of the program that serves. */
export interface MachineFacts {
  host: Fingerprint['host'];
  gpus: Fingerprint['gpus'];
  packages: Fingerprint['packages'];
  system: NonNullable<Fingerprint['system']>;
  gitSha: string | undefined;
  /** The executor's host label. */
  executor: string;
}

/**
 * A server's machine facts, from its argv before it runs (only the program matters): the runner gathers them while
 * the server starts rather than after it is ready. Never rejects: a missing tool leaves its part empty.
 */
export async function collectMachineFacts(executor: CommandRunner, command: readonly string[]): Promise<MachineFacts> {
  // The toolkit's versions depend on nothing else read here: asked at once, not after the package probe (a python
  // start, 0.45 s behind a pyenv shim).
  const toolkit = collectToolkit(executor);
  const [host, gpus, packages, gitSha] = await Promise.all([
    collectHost(executor),
    collectGpus(executor),
    collectPackages(executor, command),
    servelabGitSha(),
  ]);
  const system = await collectSystem(executor, command, gpus.length, packages, toolkit);
  return { host, gpus, packages, system, gitSha, executor: executor.hostLabel };
}

/** A fingerprint of a server from its machine's facts: its command, captured env and model, secrets redacted. */
export function fingerprintOf(facts: MachineFacts, server: FingerprintServer, options: FingerprintOptions = {}): Fingerprint {
  const secrets = redactor().withPatterns(options.redactPatterns ?? []);
  const { host, gpus, packages, system, gitSha, executor } = facts;
  const fingerprint: Fingerprint = {
    servelabVersion: VERSION,
    executor,
    host,
    gpus,
    command: secrets.args(server.command),
    env: captureEnv(server.env, options.envPatterns ?? DEFAULT_ENV_PATTERNS, secrets),
    packages,
  };
  if (Object.keys(system).length > 0) fingerprint.system = system;
  if (gitSha !== undefined) fingerprint.servelabGitSha = gitSha;
  const model = server.model ?? modelFromCommand(server.command);
  if (model !== undefined) fingerprint.model = model;
  return fingerprint;
}

/** stdout of a command, or undefined when it could not run or failed. */
async function output(executor: CommandRunner, argv: string[], timeoutMs = COMMAND_TIMEOUT_MS): Promise<string | undefined> {
  try {
    const result = await executor.run(argv, timeoutMs);
    return result.code === 0 ? result.stdout : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The host's facts in one shell (one process start here, one round trip over SSH, instead of four): uname, then the
 * OS's CPU model, CPU count and memory, each after a marker line. A command that fails leaves its section empty.
 */
const HOST_FACTS = [
  'uname -snr; echo --',
  'if [ "$(uname -s)" = Darwin ]; then sysctl -n machdep.cpu.brand_string; echo --; sysctl -n hw.ncpu; echo --; sysctl -n hw.memsize',
  'else cat /proc/cpuinfo; echo --; nproc; echo --; cat /proc/meminfo; fi 2>/dev/null; true',
].join('\n');

async function collectHost(executor: CommandRunner): Promise<Fingerprint['host']> {
  const [uname = '', cpu = '', cpus, memory = ''] = markerSections((await output(executor, ['sh', '-c', HOST_FACTS])) ?? '');
  const { os, hostname, kernel } = parseUname(uname);
  if (os === 'Darwin') return { hostname, os, kernel, cpuModel: cpu.trim(), cpus: toInt(cpus), memoryGiB: bytesToGiB(toInt(memory)) };
  return { hostname, os, kernel, cpuModel: parseCpuModel(cpu), cpus: toInt(cpus), memoryGiB: parseMeminfoGiB(memory) };
}

function toInt(text: string | undefined): number {
  const value = Number.parseInt(text?.trim() ?? '', 10);
  return Number.isFinite(value) ? value : 0;
}

async function collectGpus(executor: CommandRunner): Promise<Fingerprint['gpus']> {
  const csv = await output(executor, ['nvidia-smi', `--query-gpu=${NVIDIA_SMI_FIELDS.join(',')}`, '--format=csv,noheader,nounits']);
  return csv === undefined ? [] : parseNvidiaSmiCsv(csv);
}

/**
 * Versions of the serving stack. Python packages are read with the interpreter the server most likely uses: the
 * command's own python, or the python next to its entry point (a venv's bin/), else python3 on PATH.
 */
async function collectPackages(executor: CommandRunner, command: readonly string[]): Promise<Record<string, string>> {
  const program = command[0] ?? '';
  const interpreters: string[] = [];
  if (/^python[\d.]*$/.test(basename(program))) interpreters.push(program);
  else if (program.includes('/')) interpreters.push(`${program.slice(0, program.lastIndexOf('/'))}/python3`);
  interpreters.push('python3');

  const packages: Record<string, string> = {};
  for (const interpreter of interpreters) {
    const probe = await output(executor, [interpreter, '-c', PYTHON_PROBE]);
    if (probe !== undefined) {
      Object.assign(packages, parsePackageVersions(probe));
      break;
    }
  }
  const nativeKey = NATIVE_SERVERS[basename(program)];
  if (nativeKey !== undefined) {
    const result = await executor.run([program, '--version'], COMMAND_TIMEOUT_MS).catch(() => undefined);
    // llama-server prints its version on stderr.
    const text = result ? `${result.stdout}\n${result.stderr}` : '';
    const version = parseVersionOutput(text);
    if (version) packages[nativeKey] = version;
    const commit = parseBuildCommit(text);
    if (commit) packages[`${nativeKey}.commit`] = commit;
  }
  return packages;
}

/**
 * CUDA (driver's and toolkit's), NCCL (the one torch loads and the system library), and for multi-GPU servers the
 * GPU interconnect: `nvidia-smi topo -m` link kinds and NVLink state. A tensor-parallel server's all-reduce speed
 * depends on all of them, and none shows in a package list.
 */
async function collectSystem(
  runner: CommandRunner,
  command: readonly string[],
  gpuCount: number,
  packages: Record<string, string>,
  toolkit: Promise<{ nvcc: string | undefined; nccl: string | undefined }>,
): Promise<Record<string, string>> {
  const system: Record<string, string> = {};
  const program = command[0] ?? '';
  const python = /^python[\d.]*$/.test(basename(program))
    ? program
    : program.includes('/')
      ? `${program.slice(0, program.lastIndexOf('/'))}/python3`
      : 'python3';
  const [query, { nvcc, nccl }, torch, topology, nvlink] = await Promise.all([
    gpuCount > 0 ? output(runner, ['nvidia-smi', '-q', '-d', 'COMPUTE']) : undefined,
    toolkit,
    packages.torch !== undefined ? torchProbe(runner, python, packages.torch) : undefined,
    gpuCount > 1 ? output(runner, ['nvidia-smi', 'topo', '-m']) : undefined,
    gpuCount > 1 ? output(runner, ['nvidia-smi', 'nvlink', '-s']) : undefined,
  ]);
  const put = (key: string, value: string | undefined): void => {
    if (value !== undefined) system[key] = value;
  };
  put('cuda.driver', query && parseDriverCudaVersion(query));
  put('cuda.nvcc', nvcc && parseNvccVersion(nvcc));
  put('nccl.system', nccl && parseNcclLibraryVersion(nccl));
  Object.assign(system, parseKeyValueLines(torch ?? ''));
  if (topology !== undefined) {
    const { links, affinity } = parseTopology(topology);
    for (const [pair, kind] of Object.entries({ ...links, ...affinity })) system[`topology.${pair}`] = kind;
  }
  if (nvlink !== undefined) {
    const status = parseNvlinkStatus(nvlink);
    if (Object.keys(status).length === 0) system.nvlink = 'none';
    for (const [gpu, state] of Object.entries(status)) system[`nvlink.${gpu}`] = state;
  }
  return system;
}

/**
 * nvcc's version text and the system NCCL libraries' listing (the half of collectSystem that needs no other fact), in
 * one shell.
 */
async function collectToolkit(runner: CommandRunner): Promise<{ nvcc: string | undefined; nccl: string | undefined }> {
  const script = `nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version 2>/dev/null; echo --; ${NCCL_LIBRARY_LISTING}`;
  const text = await output(runner, ['sh', '-c', script]);
  if (text === undefined) return { nvcc: undefined, nccl: undefined };
  // No nvcc: no version (it failed alone before). The listing may be empty: an empty listing is a fact too.
  const [nvcc, nccl = ''] = markerSections(text);
  return { nvcc: nvcc || undefined, nccl };
}

const torchProbes = new WeakMap<CommandRunner, Map<string, Promise<string | undefined>>>();

/**
 * The torch probe's output, once per executor, interpreter and torch version: importing torch takes 3–4 s (measured
 * on the H200 host), paid at every server start of a campaign otherwise, and its answer (the CUDA and NCCL that torch
 * bundles) can only change with the torch install, whose version the fast package probe reads at every start.
 */
function torchProbe(runner: CommandRunner, python: string, torchVersion: string): Promise<string | undefined> {
  let probes = torchProbes.get(runner);
  if (!probes) torchProbes.set(runner, (probes = new Map()));
  const key = `${python}\0${torchVersion}`;
  let probe = probes.get(key);
  if (!probe) probes.set(key, (probe = output(runner, [python, '-c', TORCH_PROBE], TORCH_TIMEOUT_MS)));
  return probe;
}

let gitShaOnce: Promise<string | undefined> | undefined;

/**
 * Commit of the servelab checkout this process runs from, with "-dirty" when it has local changes; undefined when
 * servelab is not its own git checkout (e.g. installed from npm inside someone else's repository). Read once per
 * process: the loaded code does not change when files on disk do.
 */
export function servelabGitSha(): Promise<string | undefined> {
  gitShaOnce ??= readGitSha();
  return gitShaOnce;
}

async function readGitSha(): Promise<string | undefined> {
  const run = promisify(execFile);
  // dist/src/fingerprint/collect.js → package root.
  const root = fileURLToPath(new URL('../../../', import.meta.url));
  try {
    const git = (...args: string[]) => run('git', ['-C', root, ...args], { timeout: COMMAND_TIMEOUT_MS }).then((r) => r.stdout.trim());
    const [topLevel, packageRoot] = await Promise.all([git('rev-parse', '--show-toplevel').then((dir) => realpath(dir)), realpath(root)]);
    if (topLevel !== packageRoot) return undefined;
    const sha = await git('rev-parse', 'HEAD');
    const dirty = (await git('status', '--porcelain', '--untracked-files=no')) !== '';
    return dirty ? `${sha}-dirty` : sha;
  } catch {
    return undefined;
  }
}
