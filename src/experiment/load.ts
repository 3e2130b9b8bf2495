import { createHash } from 'node:crypto';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../config/load.js';
import type { Workload } from '../load/types.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { experimentFileSchema, type ClientOverrides, type ExperimentFile, type GridSpec, type VariantSpec } from './schema.js';
import type { ClientConfig, ResolvedExperiment, ResolvedVariant, ResolvedWorkload, ServerConfig } from './types.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../util/defaults.js';

/** `{servelab}` in a command is this installation's CLI, so simulator experiments run from any directory. */
const SERVELAB_BIN = fileURLToPath(new URL('../../../bin/servelab.js', import.meta.url));

const DEFAULT_CLIENT: ClientConfig = {
  prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 256 }, outputTokens: { kind: 'fixed', value: 128 }, seed: 0 },
  warmupRequests: 1,
  ignoreEos: true,
  requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
};

/** Read, validate and resolve an experiment file; every error names the file and the key. */
export function loadExperiment(path: string): ResolvedExperiment {
  const filePath = resolve(path);
  return resolveExperiment(filePath, loadConfigFile(filePath, experimentFileSchema));
}

export function resolveExperiment(filePath: string, file: ExperimentFile): ResolvedExperiment {
  const fail = (key: string, message: string): never => {
    throw new UserError(`${filePath}: ${key}: ${message}`, `fix ${key} in ${filePath}`, ExitCode.usage);
  };
  const baseDir = dirname(filePath);
  const baseServer: ServerConfig = {
    profile: file.profile,
    command: file.server.command.map(substituteServelab),
    env: file.server.env,
    unsetEnv: file.server.unsetEnv,
    ...(file.server.cwd !== undefined && { cwd: resolve(baseDir, file.server.cwd) }),
    ...(file.server.port !== undefined && { port: file.server.port }),
    readyTimeoutMs: file.server.readyTimeout,
    verifyServing: file.server.verifyServing,
    ...(file.server.model !== undefined && { model: file.server.model }),
  };
  const baseClient = applyClient(DEFAULT_CLIENT, file.client, file.server.model);
  if (file.client.backend) baseClient.backend = file.client.backend;
  if (file.client.slo) baseClient.slo = file.client.slo;

  const specs: Array<{ name: string; params: Record<string, string | number>; spec: VariantSpec; key: string }> = Object.entries(file.variants).map(
    ([name, spec]) => ({ name, params: {}, spec, key: `variants.${name}` }),
  );
  file.grid.forEach((grid, index) => specs.push(...expandGrid(grid, `grid[${index}]`, fail)));
  if (specs.length === 0) specs.push({ name: 'baseline', params: {}, spec: {}, key: 'variants' });

  const seen = new Set<string>();
  const variants: ResolvedVariant[] = specs.map(({ name, params, spec, key }) => {
    if (seen.has(name)) fail(key, `variant name "${name}" is used twice`);
    seen.add(name);
    const server = applyVariant(baseServer, spec);
    return { name, params, server, serverKey: serverKeyOf(server), client: applyClient(baseClient, spec.client ?? {}, undefined) };
  });

  const baseline = file.baseline ?? variants[0]!.name;
  if (!seen.has(baseline)) fail('baseline', `unknown variant "${baseline}" (variants: ${[...seen].join(', ')})`);

  const workloads = file.workloads.flatMap(expandWorkload);
  const labels = new Set<string>();
  workloads.forEach((workload, index) => {
    if (labels.has(workload.label)) fail(`workloads`, `workload "${workload.label}" appears twice (entry ${index})`);
    labels.add(workload.label);
  });

  return {
    name: file.name,
    ...(file.description !== undefined && { description: file.description }),
    filePath,
    baseline,
    metric: file.metric,
    trials: file.trials,
    seed: file.seed,
    verdict: file.verdict,
    drift: file.drift,
    executor: file.executor,
    fingerprint: file.fingerprint,
    variants,
    workloads,
  };
}

/** Identity of a server configuration: variants with equal keys share one running server. */
export function serverKeyOf(server: ServerConfig): string {
  const canonical = JSON.stringify([
    server.profile,
    server.command,
    Object.entries(server.env).sort(([a], [b]) => a.localeCompare(b)),
    [...server.unsetEnv].sort(),
    server.cwd ?? null,
    server.model ?? null,
  ]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}

export function workloadLabel(workload: Workload): string {
  switch (workload.kind) {
    case 'single-stream':
      return 'single-stream';
    case 'concurrency':
      return `c=${workload.concurrency}`;
    case 'rate':
      return `rate=${workload.requestsPerSecond}/s`;
    case 'sweep':
      return `sweep=${workload.concurrencies.join(',')}`;
  }
}

/** A sweep becomes one concurrency workload per level, so each level is its own trial (and its own verdict). */
function expandWorkload(workload: Workload): ResolvedWorkload[] {
  if (workload.kind === 'sweep') {
    return workload.concurrencies.map((concurrency) =>
      expandWorkload({ kind: 'concurrency', concurrency, requests: workload.requestsPerLevel })[0]!,
    );
  }
  const concurrency = workload.kind === 'concurrency' ? workload.concurrency : workload.kind === 'single-stream' ? 1 : undefined;
  return [{ label: workloadLabel(workload), workload, ...(concurrency !== undefined && { concurrency }) }];
}

function expandGrid(
  grid: GridSpec,
  key: string,
  fail: (key: string, message: string) => never,
): Array<{ name: string; params: Record<string, string | number>; spec: VariantSpec; key: string }> {
  const names = Object.keys(grid.params);
  for (const name of names) if (!grid.name.includes(`{${name}}`)) fail(`${key}.name`, `must contain {${name}} so every grid point gets its own name`);
  let points: Array<Record<string, string | number>> = [{}];
  for (const name of names) points = points.flatMap((point) => grid.params[name]!.map((value) => ({ ...point, [name]: value })));
  return points.map((params) => {
    const fill = (text: string): string => names.reduce((out, name) => out.replaceAll(`{${name}}`, String(params[name])), text);
    const spec: VariantSpec = {
      ...(grid.args && { args: grid.args.map(fill) }),
      ...(grid.env && { env: Object.fromEntries(Object.entries(grid.env).map(([k, v]) => [k, fill(v)])) }),
      ...(grid.unsetEnv && { unsetEnv: grid.unsetEnv }),
      ...(grid.client && { client: grid.client }),
    };
    return { name: fill(grid.name), params, spec, key };
  });
}

function applyVariant(base: ServerConfig, spec: VariantSpec): ServerConfig {
  const env = { ...base.env, ...spec.env };
  const unset = new Set(base.unsetEnv.filter((name) => !(name in (spec.env ?? {}))));
  for (const name of spec.unsetEnv ?? []) {
    delete env[name];
    unset.add(name);
  }
  return { ...base, command: [...base.command, ...(spec.args ?? []).map(substituteServelab)], env, unsetEnv: [...unset].sort() };
}

function applyClient(base: ClientConfig, overrides: ClientOverrides, serverModel: string | undefined): ClientConfig {
  const model = overrides.model ?? serverModel ?? base.model;
  return {
    ...base,
    ...(overrides.prompts && { prompts: overrides.prompts }),
    ...(overrides.warmupRequests !== undefined && { warmupRequests: overrides.warmupRequests }),
    ...(overrides.ignoreEos !== undefined && { ignoreEos: overrides.ignoreEos }),
    ...(overrides.requestTimeout !== undefined && { requestTimeoutMs: overrides.requestTimeout }),
    ...(model !== undefined && { model }),
  };
}

function substituteServelab(arg: string): string {
  return arg.replaceAll('{servelab}', SERVELAB_BIN);
}
