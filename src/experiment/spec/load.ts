import { existsSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { lineOfKey, loadConfigFile } from '../../config/load.js';
import { mentionsPort } from '../../launch/chosen-port.js';
import { serverIdentity } from '../../launch/identity.js';
import { capacityLabel } from '../../load/capacity.js';
import { rateLabel, TRACE_LABEL } from '../../load/level.js';
import type { TraceSource } from '../../load/trace/types.js';
import type { PromptSource, Workload } from '../../load/types.js';
import { isMetric, type MetricDef, metricDef } from '../../metrics/catalog.js';
import { BUILTIN_PROFILES } from '../../profiles/builtin.js';
import {
  DEFAULT_INPUT_TOKENS,
  DEFAULT_PROMPT_SEED,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SYNTHETIC_OUTPUT_TOKENS,
  DEFAULT_WARMUP_PER_WORKLOAD,
  DEFAULT_WARMUP_REQUESTS,
} from '../../util/defaults.js';
import { isUserError, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { parseConstraint } from './constraint.js';
import { checkInputFiles } from './input-files.js';
import { defaultObjectiveWorkload } from './metrics.js';
import { readSampleSet } from './sample-set.js';
import {
  type ClientOverrides,
  type ExperimentFile,
  experimentFileSchema,
  type GridSpec,
  VARIANT_NAME,
  VARIANT_NAME_RULE,
  type VariantSpec,
  type WorkloadEntry,
} from './schema.js';
import { resolveSearch } from './search-space.js';
import type {
  AccuracySettings,
  ClientConfig,
  Constraint,
  MetricName,
  Objective,
  ResolvedExperiment,
  ResolvedLane,
  ResolvedVariant,
  ResolvedWorkload,
  ServerConfig,
  WarmupConfig,
} from './types.js';

/** `{servelab}` in a command is this installation's CLI (bin/servelab.js, from dist/src/experiment/spec/), so simulator experiments run from any directory. */
const SERVELAB_BIN = fileURLToPath(new URL('../../../../bin/servelab.js', import.meta.url));

const DEFAULT_CLIENT: ClientConfig = {
  prompts: {
    kind: 'synthetic',
    inputTokens: { kind: 'fixed', value: DEFAULT_INPUT_TOKENS },
    outputTokens: { kind: 'fixed', value: DEFAULT_SYNTHETIC_OUTPUT_TOKENS },
    seed: DEFAULT_PROMPT_SEED,
  },
  warmup: { requests: DEFAULT_WARMUP_REQUESTS, perWorkload: DEFAULT_WARMUP_PER_WORKLOAD },
  ignoreEos: true,
  requestTimeoutMs: DEFAULT_REQUEST_TIMEOUT_MS,
  cache: 'cold',
};

/** Read, validate and resolve an experiment file; every error names the file and the key. */
export function loadExperiment(path: string): ResolvedExperiment {
  const filePath = resolve(path);
  return resolveExperiment(filePath, loadConfigFile(filePath, experimentFileSchema));
}

export function resolveExperiment(filePath: string, file: ExperimentFile): ResolvedExperiment {
  const fail = (key: string, message: string): never => {
    const line = lineOfKey(filePath, key);
    throw new UserError(`${filePath}${line ? `:${line}` : ''}: ${key}: ${message}`, `fix ${key} in ${filePath}`, ExitCode.usage);
  };
  const baseDir = dirname(filePath);
  const baseServer: ServerConfig = {
    profile: file.profile,
    command: file.server.command.map(substituteServelab),
    env: file.server.env,
    unsetEnv: file.server.unsetEnv,
    // Only a local server's directory can be checked from here; a remote one is the host's business.
    ...(file.server.cwd !== undefined && {
      cwd: file.executor.kind === 'local' ? existingDirectory(resolve(baseDir, file.server.cwd), fail) : resolve(baseDir, file.server.cwd),
    }),
    ...(file.server.port !== undefined && { port: file.server.port }),
    ...(file.server.portRange !== undefined && { portRange: file.server.portRange }),
    readyTimeoutMs: file.server.readyTimeout,
    verifyServing: file.server.verifyServing ?? true,
    ...(file.server.model !== undefined && { model: file.server.model }),
  };
  checkWarmupKeys('client', file.client, fail);
  const baseClient = applyClient(DEFAULT_CLIENT, file.client, file.server.model);
  if (file.client.backend) baseClient.backend = file.client.backend;
  if (file.client.slo) baseClient.slo = file.client.slo;
  baseClient.cache = file.client.cache;
  const profile = BUILTIN_PROFILES[file.profile];
  if (file.client.cache === 'reset' && profile && !profile.cacheReset) {
    const error = cacheResetUnknown(file.profile);
    throw new UserError(`${filePath}: ${error.message}`, error.hint);
  }

  const specs: Array<{ name: string; params: Record<string, string | number>; spec: VariantSpec; key: string }> = Object.entries(file.variants).map(
    ([name, spec]) => ({ name, params: {}, spec, key: `variants.${name}` }),
  );
  file.grid.forEach((grid, index) => specs.push(...expandGrid(grid, `grid[${index}]`, fail)));
  const searched = file.search && resolveSearch(file.search, fail);
  // Slurm jobs claim the planned blocks from the store; a search plans its next block only after the last one is measured.
  if (searched && file.executor.kind === 'slurm')
    fail(
      'search',
      'a search decides its next points as it goes, which Slurm jobs working through a fixed plan cannot: run it with executor local or ssh lanes',
    );
  for (const point of searched?.points ?? []) {
    if (!VARIANT_NAME.test(point.name)) fail('search.name', `${VARIANT_NAME_RULE}, got "${point.name}"`);
    const { name, params, ...spec } = point;
    specs.push({ name, params, spec, key: 'search' });
  }
  if (specs.length === 0) specs.push({ name: 'baseline', params: {}, spec: {}, key: 'variants' });

  const seen = new Set<string>();
  const promptsKeys: string[] = [];
  // A remote client (ssh, client: remote) reads its datasets and traces on the host: their paths are left as written.
  const remoteClient = file.executor.kind === 'ssh' && file.executor.client === 'remote';
  const variants: ResolvedVariant[] = specs.map(({ name, params, spec, key }) => {
    if (seen.has(name)) fail(key, `variant name "${name}" is used twice`);
    seen.add(name);
    const server = applyVariant(baseServer, spec);
    if (server.portRange && !mentionsPort(server))
      fail('server.portRange', `variant "${name}": the command has no {port} to put the picked port in (write --port {port})`);
    checkWarmupKeys(`${key}.client`, spec.client ?? {}, fail);
    const client = applyClient(baseClient, spec.client ?? {}, undefined);
    const promptsKey = spec.client?.prompts ? `${key}.client.prompts.path` : 'client.prompts.path';
    const prompts = remoteClient ? client.prompts : resolvePromptPath(client.prompts, baseDir, promptsKey, fail);
    promptsKeys.push(remoteClient ? '' : promptsKey);
    return { name, params, server, serverKey: serverKeyOf(server), client: { ...client, prompts } };
  });

  const baseline = file.baseline ?? variants[0]!.name;
  if (!seen.has(baseline)) fail('baseline', `unknown variant "${baseline}" (variants: ${[...seen].join(', ')})`);

  // Where each trace workload's trace is written, for the input check's errors.
  const traceKeys = new Map<ResolvedWorkload, string>();
  const workloads = file.workloads.flatMap((entry, index): ResolvedWorkload[] => {
    if (entry.kind !== 'trace') return expandWorkload(entry);
    const { trace, ...workload } = entry as WorkloadEntry & { trace?: TraceSource };
    const key = trace ? `workloads[${index}].trace.path` : 'client.prompts.path';
    const replayed = trace ? (remoteClient ? trace : resolvePromptPath(trace, baseDir, key, fail)) : writtenBeforeTrace(variants, `workloads[${index}]`, fail);
    const resolved = { label: workloadLabel(workload), workload, prompts: replayed };
    if (!remoteClient) traceKeys.set(resolved, key);
    return [resolved];
  });
  const labels = new Set<string>();
  workloads.forEach((workload, index) => {
    if (labels.has(workload.label)) fail(`workloads`, `workload "${workload.label}" appears twice (entry ${index})`);
    labels.add(workload.label);
  });
  // Sessions wait for each answer before the next turn: a closed loop in one thread (load/session-loop.ts).
  const sessions = variants.find((variant) => variant.client.prompts.kind === 'sessions');
  const openLoop = workloads.find((workload) => workload.workload.kind === 'rate');
  if (sessions && openLoop) fail('workloads', `variant "${sessions.name}" runs multi-turn sessions, which need a closed loop: "${openLoop.label}" is a rate`);
  if (sessions && sessions.client.workers !== undefined && sessions.client.workers !== 1) {
    fail('client.workers', `variant "${sessions.name}" runs multi-turn sessions, which run in one load thread: leave workers at 1`);
  }
  // A trace's speedup times its arrivals, which only a trace workload replays; other workloads take its lengths only.
  const sped = variants.find((variant) => variant.client.prompts.kind === 'trace' && variant.client.prompts.speedup !== undefined);
  if (sped && !workloads.some((workload) => isDeepStrictEqual(workload.prompts, sped.client.prompts))) {
    fail(
      'client.prompts.speedup',
      `variant "${sped.name}" speeds up a trace's arrivals, but no workload replays them: a trace workload replays the trace it names ({ kind: trace, trace: { path, format, speedup } }); here drop speedup`,
    );
  }
  checkInputFiles(
    filePath,
    variants.flatMap((variant, index) => (promptsKeys[index] ? [{ variant, promptsKey: promptsKeys[index]! }] : [])),
    [...traceKeys].map(([workload, promptsKey]) => ({ workload, promptsKey })),
  );
  const judged = [file.metric, file.objective?.maximize, file.objective?.minimize, ...Object.keys(file.objective?.subjectTo ?? {})];
  if (judged.includes('sloCapacity') && !workloads.some((workload) => workload.workload.kind === 'capacity')) {
    fail(file.metric === 'sloCapacity' ? 'metric' : 'objective', 'sloCapacity is measured only by a capacity workload: add one to workloads (kind: capacity)');
  }
  const needing = (need: MetricDef['needs']) => judged.find((name) => name !== undefined && isMetric(name) && metricDef(name).needs === need);
  const energy = needing('power');
  if (energy && !file.telemetry.enabled) fail('telemetry.enabled', `${energy} needs the GPU power readings of telemetry: set it to true`);
  const priced = needing('cost');
  if (priced && !file.cost) fail('cost', `${priced} needs cost: { gpuHourUsd: … }`);

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
    validity: { maxFailedFraction: file.maxFailedFraction, trialRetries: file.trialRetries },
    executor: file.executor,
    ...(file.lanes && { lanes: resolveLanes(file, fail) }),
    fingerprint: file.fingerprint,
    preflight: file.preflight,
    telemetry: { enabled: file.telemetry.enabled, intervalMs: file.telemetry.interval, serverMetrics: file.telemetry.serverMetrics },
    variants,
    workloads,
    schedule: file.schedule,
    ...(file.passes !== undefined && { passes: file.passes }),
    ...(file.budget && {
      budget: {
        gpusPerServer: file.budget.gpusPerServer,
        ...(file.budget.wallTime !== undefined && { wallTimeMs: file.budget.wallTime }),
        ...(file.budget.gpuHours !== undefined && { gpuHours: file.budget.gpuHours }),
      },
    }),
    ...(file.cost && { cost: { gpuHourUsd: file.cost.gpuHourUsd, gpus: file.cost.gpus ?? file.budget?.gpusPerServer ?? 1 } }),
    ...(file.maxRestarts !== undefined && { maxRestarts: file.maxRestarts }),
    stopping: file.stopping,
    ...(searched && { search: searched.search }),
    ...(file.objective && { objective: resolveObjective(file.objective, workloads, file.quality?.accuracy !== undefined, fail) }),
    // An outputs or outputMatch constraint needs the answers: it turns the check on with its defaults.
    ...((file.quality?.equivalence || judgesOutputs(file) || file.quality?.accuracy) && {
      quality: {
        ...((file.quality?.equivalence || judgesOutputs(file)) && {
          equivalence: file.quality?.equivalence ?? { prompts: 16, outputTokens: 128 },
        }),
        ...(file.quality?.accuracy && { accuracy: resolveAccuracy(file.quality.accuracy, filePath, fail) }),
      },
    }),
  };
}

/** The objective constrains the answers (subjectTo.outputs or outputMatch), which needs quality.equivalence. */
function judgesOutputs(file: ExperimentFile): boolean {
  const subjectTo = file.objective?.subjectTo;
  return subjectTo?.outputs !== undefined || subjectTo?.outputMatch !== undefined;
}

function resolveObjective(
  objective: NonNullable<ExperimentFile['objective']>,
  workloads: readonly ResolvedWorkload[],
  hasAccuracy: boolean,
  fail: (key: string, message: string) => never,
): Objective {
  const metric = objective.maximize ?? objective.minimize!;
  const workload = objective.workload ?? defaultObjectiveWorkload(metric, workloads);
  const named = workloads.find((candidate) => candidate.label === workload);
  if (!named) fail('objective.workload', `unknown workload "${workload}" (workloads: ${workloads.map((candidate) => candidate.label).join(', ')})`);
  const capacityMetric = [metric, ...Object.keys(objective.subjectTo)].includes('sloCapacity');
  if (capacityMetric && named.workload.kind !== 'capacity') {
    fail(
      'objective.workload',
      `sloCapacity is measured only by a capacity workload, and "${workload}" is a ${named.workload.kind}: name the capacity workload`,
    );
  }
  const parse = (name: string, text: string): { op: Constraint['op']; value: number } => {
    const comparison = parseConstraint(text);
    if ('value' in comparison) return comparison;
    return fail(`objective.subjectTo.${name}`, `only accuracy compares with the baseline; give ${name} a number, e.g. "${comparison.op} 0.99"`);
  };
  const { outputs, outputMatch, accuracy, ...metrics } = objective.subjectTo;
  const constraints = Object.entries(metrics).map(([metric, text]): Constraint => ({ metric: metric as MetricName, ...parse(metric, text!) }));
  if (accuracy !== undefined && !hasAccuracy) fail('objective.subjectTo.accuracy', 'accuracy needs quality.accuracy: { path: FILE, scorer: … } to score');
  const accuracyBound = accuracy === undefined ? undefined : parseConstraint(accuracy);
  // A share is bounded from below ("at least this accurate"), within 0..1 and the baseline ± 100 points.
  if (accuracyBound && (accuracyBound.op === '<' || accuracyBound.op === '<=')) {
    fail('objective.subjectTo.accuracy', `"${accuracy}" caps accuracy from above, which no config should want: use >= or >, e.g. ">= baseline - 1%"`);
  }
  const outOfRange =
    accuracyBound && ('value' in accuracyBound ? accuracyBound.value < 0 || accuracyBound.value > 1 : Math.abs(accuracyBound.baselineOffset) > 1);
  if (outOfRange) fail('objective.subjectTo.accuracy', `"${accuracy}" is outside what a share can be: a number from 0 to 1, or baseline ± at most 100%`);
  const quality = {
    ...(outputs !== undefined && { outputs: 'equivalent' as const }),
    ...(outputMatch !== undefined && { outputMatch: parse('outputMatch', outputMatch) }),
    ...(accuracyBound && { accuracy: accuracyBound }),
  };
  return { metric, direction: objective.maximize !== undefined ? 'maximize' : 'minimize', workload, constraints, ...quality };
}

/** Identity of a server configuration: variants with equal keys share one running server. */
export function serverKeyOf(server: ServerConfig): string {
  return serverIdentity({
    profile: server.profile,
    command: server.command,
    env: server.env,
    unsetEnv: server.unsetEnv,
    ...(server.cwd !== undefined && { cwd: server.cwd }),
    ...(server.model !== undefined && { model: server.model }),
  });
}

export function workloadLabel(workload: Workload): string {
  switch (workload.kind) {
    case 'single-stream':
      return 'single-stream';
    case 'concurrency':
      return `c=${workload.concurrency}`;
    case 'rate':
      return rateLabel(workload);
    case 'sweep':
      return `sweep=${workload.concurrencies.join(',')}`;
    case 'trace':
      return TRACE_LABEL;
    case 'capacity':
      return capacityLabel(workload);
  }
}

/** A sweep becomes one concurrency workload per level, so each level is its own trial (and its own verdict). */
function expandWorkload(workload: Workload): ResolvedWorkload[] {
  if (workload.kind === 'sweep') {
    return workload.concurrencies.map((concurrency) => expandWorkload({ kind: 'concurrency', concurrency, requests: workload.requestsPerLevel })[0]!);
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
    const name = fill(grid.name);
    if (!VARIANT_NAME.test(name)) fail(`${key}.name`, `${VARIANT_NAME_RULE}, got "${name}"`);
    return { name, params, spec, key };
  });
}

/**
 * A dataset path is relative to the experiment file (not to wherever `servelab run` is started) and must exist now:
 * finding it missing only after a server has loaded its model costs minutes to hours.
 */
function resolvePromptPath<Source extends PromptSource>(prompts: Source, baseDir: string, key: string, fail: (key: string, message: string) => never): Source {
  if (prompts.kind === 'synthetic' || prompts.kind === 'shared-prefix' || prompts.path === undefined) return prompts;
  const path = resolve(baseDir, prompts.path);
  if (!existsSync(path)) fail(key, `no such file: ${path}`);
  if (!statSync(path).isFile()) fail(key, `not a file: ${path}`);
  return { ...prompts, path };
}

/**
 * The trace a trace workload written without `trace:` replays: the variants' one `client.prompts` trace, as files
 * said it before a trace workload named its own. Anything else has no meaning to keep, and names the new shape.
 */
function writtenBeforeTrace(variants: readonly ResolvedVariant[], key: string, fail: (key: string, message: string) => never): TraceSource {
  const [first, ...others] = variants.map((variant) => variant.client.prompts);
  if (first?.kind === 'trace' && others.every((prompts) => isDeepStrictEqual(prompts, first))) return first;
  const why = first?.kind === 'trace' ? 'the variants name different traces' : `client.prompts is ${first?.kind}, not a trace`;
  return fail(
    key,
    `a trace workload replays the trace it names (${why}): write { kind: trace, trace: { path: FILE, format: mooncake|burstgpt|azure }, maxInFlight: … }`,
  );
}

/** quality.accuracy with its path resolved against the experiment file (it must exist now) and its format from the name. */
function resolveAccuracy(
  accuracy: NonNullable<NonNullable<ExperimentFile['quality']>['accuracy']>,
  filePath: string,
  fail: (key: string, message: string) => never,
): AccuracySettings {
  const path = resolve(dirname(filePath), accuracy.path);
  if (!existsSync(path) || !statSync(path).isFile()) fail('quality.accuracy.path', `no such file: ${path}`);
  const format = /\.csv$/i.test(path)
    ? 'csv'
    : /\.jsonl?$/i.test(path)
      ? 'jsonl'
      : fail('quality.accuracy.path', `expected a .jsonl or .csv file, got ${path}`);
  const settings: AccuracySettings = {
    path,
    format,
    scorer: accuracy.scorer,
    ...(accuracy.items !== undefined && { items: accuracy.items }),
    outputTokens: accuracy.outputTokens,
    fields: accuracy.fields,
  };
  // Read now: a record without its prompt or answer found only after a server loaded its model costs the startup.
  try {
    readSampleSet(settings);
  } catch (error) {
    if (!isUserError(error)) throw error;
    // The reader's hint (map a field, lower items) says more than "fix the path".
    const line = lineOfKey(filePath, 'quality.accuracy.path');
    throw new UserError(`${filePath}${line ? `:${line}` : ''}: quality.accuracy.path: ${error.message}`, error.hint, ExitCode.usage);
  }
  return settings;
}

function existingDirectory(path: string, fail: (key: string, message: string) => never): string {
  if (!existsSync(path) || !statSync(path).isDirectory()) fail('server.cwd', `no such directory: ${path}`);
  return path;
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
    warmup: resolveWarmup(base.warmup, overrides),
    ...(overrides.ignoreEos !== undefined && { ignoreEos: overrides.ignoreEos }),
    ...(overrides.requestTimeout !== undefined && { requestTimeoutMs: overrides.requestTimeout }),
    ...(model !== undefined && { model }),
    ...(overrides.tokenizer !== undefined && { tokenizerPath: overrides.tokenizer }),
    ...(overrides.contextTokens !== undefined && { contextTokens: overrides.contextTokens }),
    ...(overrides.workers !== undefined && { workers: overrides.workers }),
    ...(overrides.requireFullOutput !== undefined && { requireFullOutput: overrides.requireFullOutput }),
    ...(overrides.tokenCounts !== undefined && { tokenCounts: overrides.tokenCounts }),
  };
}

/** One way to say each thing: `warmupRequests` or `warmup.requests`; a count or a duration. */
function checkWarmupKeys(key: string, client: ClientOverrides, fail: (key: string, message: string) => never): void {
  if (client.warmupRequests !== undefined && client.warmup !== undefined) fail(`${key}.warmupRequests`, 'give warmup.requests instead (not both)');
  if (client.warmup?.requests !== undefined && client.warmup.seconds !== undefined) fail(`${key}.warmup`, 'give requests or seconds, not both');
}

/**
 * The one resolution of the warm-up: `warmupRequests` is `warmup.requests`; a count replaces a duration and the
 * other way round; what is not given is the base's (the experiment's, or the defaults).
 */
export function resolveWarmup(base: WarmupConfig, overrides: Pick<ClientOverrides, 'warmup' | 'warmupRequests'>): WarmupConfig {
  const given = overrides.warmup ?? {};
  const requests = given.requests ?? overrides.warmupRequests;
  const { durationMs: baseDuration, ...rest } = base;
  const durationMs = given.seconds ?? (requests === undefined ? baseDuration : undefined);
  return {
    ...rest,
    ...(requests !== undefined && { requests }),
    ...(durationMs !== undefined && { durationMs }),
    ...(given.perWorkload !== undefined && { perWorkload: given.perWorkload }),
  };
}

function substituteServelab(arg: string): string {
  return arg.replaceAll('{servelab}', SERVELAB_BIN);
}

export function cacheResetUnknown(profileName: string): UserError {
  return new UserError(
    `client.cache: reset needs a cache-reset API, and profile "${profileName}" knows none`,
    'use client.cache: cold (a per-trial prompt salt), or a profile with one (vllm, sglang, llamacpp, simulator)',
  );
}

/**
 * `lanes:` with names filled in, a Slurm lane's `count` expanded into one lane per job; refused where two lanes could
 * not run at once, or where a lane's kind does not match the executor (Slurm jobs are dispatched, the rest run here).
 */
function resolveLanes(file: ExperimentFile, fail: (key: string, message: string) => never): ResolvedLane[] {
  const lanes = file.lanes ?? [];
  const slurm = file.executor.kind === 'slurm';
  for (const [index, lane] of lanes.entries()) {
    if (slurm && lane.executor !== undefined)
      fail(`lanes[${index}].executor`, "with executor kind slurm every lane is a Slurm job: set its sbatch settings under the lane's slurm:");
    if (!slurm && (lane.slurm !== undefined || (lane.count ?? 1) > 1))
      fail(`lanes[${index}]`, 'slurm: and count: are for Slurm lanes (executor kind slurm); list local or SSH lanes one by one');
  }
  // An unnamed lane is lane N by its place among all lanes (jobs included); a named one with count N is NAME-1 … NAME-N.
  const expanded = lanes.flatMap((lane) => Array.from({ length: lane.count ?? 1 }, (_, job) => ({ lane, job })));
  const resolved = expanded.map(({ lane, job }, index) => ({
    name: lane.name === undefined ? `lane${index + 1}` : lane.count === undefined ? lane.name : `${lane.name}-${job + 1}`,
    env: lane.env ?? {},
    ...(lane.portRange !== undefined && { portRange: lane.portRange }),
    ...(lane.executor !== undefined && { executor: lane.executor }),
    ...(lane.slurm !== undefined && { slurm: lane.slurm }),
  }));
  // Several Slurm jobs may share a node, as local lanes share this machine.
  if (resolved.length > 1 && file.server.port !== undefined)
    fail('server.port', 'a fixed port cannot serve several lanes at once: use {port} with a free one per launch, or a portRange per lane');
  const names = resolved.map((lane) => lane.name);
  const repeated = names.find((name, index) => names.indexOf(name) !== index);
  if (repeated !== undefined) fail('lanes', `two lanes are named "${repeated}": give each its own name`);
  return resolved;
}
