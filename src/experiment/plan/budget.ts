import { median } from 'simple-statistics';
import { configKey } from '../../launch/config.js';
import { BUILTIN_PROFILES } from '../../profiles/builtin.js';
import { recentReadyMs, recentTrialDurationsMs } from '../../store/campaign.js';
import type { Db } from '../../store/db.js';
import { pairKey } from '../../util/trial-keys.js';
import { laneName } from '../analysis/lanes.js';
import { laneServer } from '../spec/lane-server.js';
import { readSampleSet, type SampleItem } from '../spec/sample-set.js';
import type { Plan, PlannedTrial, ResolvedExperiment, ServerConfig } from '../spec/types.js';
import { LanePool } from './lane-pool.js';
import { countRestarts } from './plan.js';
import { type DeclaredCosts, declaredAccuracyMs, declaredEquivalenceMs, declaredStartWarmupMs, declaredTrialMs, START_OVERHEAD_MS } from './trial-estimate.js';

/**
 * A predicted duration and where it comes from, best first: the store's history (median of `samples` recorded
 * values); what the server declares about itself (the simulator's flags); the engine's typical figure (a profile's
 * `typicalStartupMs`: a startup only); else unknown, shown as such rather than as a made-up number.
 */
export type Estimate =
  | { ms: number; source: 'history'; samples: number }
  | { ms: number; source: 'declared' | 'typical'; samples: 0; basis: string }
  | { ms: undefined; source: 'unknown'; samples: 0 };

export const UNKNOWN: Estimate = { ms: undefined, source: 'unknown', samples: 0 };

/** Predicted startup per server config and duration per (variant, workload) trial, keyed as the plan keys them. */
export interface CostModel {
  startups: Record<string, Estimate>;
  trials: Record<string, Estimate>;
  /**
   * Declared `warmup.perWorkload` warm-up of a pair's first trial after each server start (a history's trial
   * durations already hold it: the runner times a trial from before its warm-up).
   */
  startWarmups?: Record<string, number>;
  /**
   * The untimed quality passes each start of a config sends before its trials (its variants' equivalence and
   * accuracy passes), by server key; `uncounted` names those no figure is declared for (see PlanPrediction).
   */
  startPasses?: Record<string, { ms: number; uncounted: string[] }>;
}

export interface ConfigPrediction {
  serverKey: string;
  variants: string[];
  starts: number;
  trials: number;
  startupMs: Estimate;
  /** Measuring time of this config's planned trials; undefined when any of them is unknown. */
  measureMs: number | undefined;
  /** Where its trial figures come from (each source used at least once). */
  trialSources: Array<Estimate['source']>;
}

/** One lane's share of a prediction: its starts (each config of each block it runs), trials and busy time. */
export interface LanePrediction {
  name: string;
  starts: number;
  trials: number;
  /** Startups and trials of this lane, one after another; undefined when a figure is unknown. */
  ms: number | undefined;
}

export interface PlanPrediction {
  trials: number;
  /** Server starts in all (every lane's). */
  starts: number;
  /** Starts after each lane's first: the run's server restarts. */
  restarts: number;
  /** Each total is undefined when a figure it sums is unknown: never a number missing a part. */
  startupTotalMs: number | undefined;
  measureMs: number | undefined;
  wallMs: number | undefined;
  gpuHours: number | undefined;
  gpusPerServer: number;
  /** Lanes the plan runs on (experiment `lanes:`); absent: one. */
  lanes?: number;
  /** Each lane's share, the slowest's time being `wallMs`; with `lanes` only. */
  laneShares?: LanePrediction[];
  /** Starts the same plan needs on one lane: a config whose blocks go to several lanes starts on each of them. */
  oneLaneStarts?: number;
  configs: ConfigPrediction[];
  /** Untimed quality passes at each start that no figure covers (named, once each): not in the totals. */
  uncountedPasses?: string[];
  /** Every source a figure came from, best first; anything but ['history'] is said next to the prediction. */
  sources: Array<Estimate['source']>;
}

/** The history key the runner records a config's startups under (shared with `servelab launch`). */
export function startupKeyOf(server: ServerConfig): string {
  return configKey({ command: server.command, env: server.env, unsetEnv: server.unsetEnv, profile: server.profile });
}

/**
 * Recorded startups of a server config: on lanes, those of every lane's version of it (a lane's env is part of the
 * key the runner records under), else of the config itself.
 */
function startupHistory(db: Db, experiment: ResolvedExperiment, server: ServerConfig): number[] {
  const servers = experiment.lanes ? experiment.lanes.map((lane) => laneServer(server, lane)) : [server];
  return [...new Set(servers.map(startupKeyOf))].flatMap((key) => recentReadyMs(db, key));
}

/** What the caller can read of a server's own declared speed (the CLI reads the simulator's flags). */
export type DeclaredCostsOf = (server: ServerConfig) => DeclaredCosts | undefined;

/**
 * Costs from the store: median of the config's last startups, and of the pair's recorded trial durations in this
 * experiment (any variant of the same workload when the pair has none). Without history: the server's declared
 * figures, else the engine's typical startup, else unknown.
 */
export function loadCostModel(db: Db | undefined, experiment: ResolvedExperiment, declaredOf?: DeclaredCostsOf): CostModel {
  const startups: Record<string, Estimate> = {};
  const trials: Record<string, Estimate> = {};
  const startWarmups: Record<string, number> = {};
  for (const variant of experiment.variants) {
    const declared = declaredOf?.(variant.server);
    startups[variant.serverKey] ??= fromHistory(db ? startupHistory(db, experiment, variant.server) : []) ?? startupWithoutHistory(variant.server, declared);
    for (const { label, workload } of experiment.workloads) {
      const own = db ? recentTrialDurationsMs(db, { experimentName: experiment.name, workload: label, variant: variant.name }) : [];
      const any = own.length > 0 || !db ? own : recentTrialDurationsMs(db, { experimentName: experiment.name, workload: label });
      const trialMs = declared && declaredTrialMs(declared, workload, variant.client);
      const pair = pairKey({ variant: variant.name, workload: label });
      trials[pair] = fromHistory(any) ?? (trialMs !== undefined ? { ms: trialMs, source: 'declared', samples: 0, basis: declared!.basis } : UNKNOWN);
      const warmupMs = trials[pair].source === 'declared' ? declaredStartWarmupMs(declared!, workload, variant.client) : undefined;
      if (warmupMs) startWarmups[pair] = warmupMs;
    }
  }
  return { startups, trials, startWarmups, startPasses: qualityPasses(experiment, declaredOf) };
}

/**
 * Per server config, the quality passes of its variants at each start, from declared request times: equivalence,
 * and accuracy with every answer at its longest. What has no declared figure (an engine's passes) is named as
 * uncounted rather than guessed, and the prediction says so.
 */
function qualityPasses(experiment: ResolvedExperiment, declaredOf?: DeclaredCostsOf): Record<string, { ms: number; uncounted: string[] }> {
  const passes: Record<string, { ms: number; uncounted: string[] }> = {};
  const { equivalence, accuracy } = experiment.quality ?? {};
  const baseline = experiment.variants.find((variant) => variant.name === experiment.baseline);
  // The sample set, read once (the experiment's loading already checked it).
  let items: SampleItem[] | undefined;
  for (const variant of experiment.variants) {
    const entry = (passes[variant.serverKey] ??= { ms: 0, uncounted: [] });
    if (equivalence && baseline) {
      const declared = declaredOf?.(variant.server);
      const ms = declared && declaredEquivalenceMs(declared, equivalence, baseline.client.prompts);
      if (ms === undefined) entry.uncounted.push(`${variant.name}'s equivalence pass (${equivalence.prompts} prompts × ${equivalence.outputTokens} tokens)`);
      else entry.ms += ms;
    }
    if (accuracy) {
      const declared = declaredOf?.(variant.server);
      if (declared) entry.ms += declaredAccuracyMs(declared, accuracy, (items ??= readSampleSet(accuracy)));
      else entry.uncounted.push(`${variant.name}'s accuracy pass (${accuracy.items === undefined ? 'every item' : `${accuracy.items} items`})`);
    }
  }
  return passes;
}

function fromHistory(values: number[]): Estimate | undefined {
  return values.length > 0 ? { ms: median(values), source: 'history', samples: values.length } : undefined;
}

function startupWithoutHistory(server: ServerConfig, declared: DeclaredCosts | undefined): Estimate {
  if (declared) return { ms: declared.startupMs + START_OVERHEAD_MS, source: 'declared', samples: 0, basis: declared.basis };
  const typical = BUILTIN_PROFILES[server.profile]?.typicalStartupMs;
  return typical === undefined ? UNKNOWN : { ms: typical, source: 'typical', samples: 0, basis: `typical for ${server.profile}, no history` };
}

const SOURCE_ORDER: ReadonlyArray<Estimate['source']> = ['history', 'declared', 'typical', 'unknown'];

/**
 * Wall time and GPU-hours of a plan: every start of a config plus every trial, on the experiment's lanes as a run
 * takes them (LanePool: the lane free first takes the next stretch), so the wall time is the slowest lane's and
 * the starts are those the lanes need. One lane: one after another, in plan order.
 */
export function predictPlan(plan: Pick<Plan, 'trials'>, experiment: ResolvedExperiment, costs: CostModel): PlanPrediction {
  const configs = new Map<string, ConfigPrediction>();
  const sources = new Set<Estimate['source']>();
  const uncounted = new Set<string>();
  /** One server start and its trials: counted on its config; its time, undefined when a figure is unknown. */
  const stretchMs = (stretch: readonly PlannedTrial[]): number | undefined => {
    const serverKey = stretch[0]!.serverKey;
    let config = configs.get(serverKey);
    if (!config) {
      const startupMs = costs.startups[serverKey] ?? UNKNOWN;
      const variants = experiment.variants.filter((variant) => variant.serverKey === serverKey).map((variant) => variant.name);
      config = { serverKey, variants, starts: 0, trials: 0, startupMs, measureMs: 0, trialSources: [] };
      configs.set(serverKey, config);
      sources.add(startupMs.source);
    }
    config.starts += 1;
    let ms: number | undefined = config.startupMs.ms;
    const passes = costs.startPasses?.[serverKey];
    if (passes) {
      config.measureMs = sum(config.measureMs, passes.ms);
      ms = sum(ms, passes.ms);
      for (const pass of passes.uncounted) uncounted.add(pass);
    }
    const warmedOnStart = new Set<string>();
    for (const trial of stretch) {
      const pair = pairKey(trial);
      const trialMs = costs.trials[pair] ?? UNKNOWN;
      sources.add(trialMs.source);
      if (!config.trialSources.includes(trialMs.source)) config.trialSources.push(trialMs.source);
      config.trials += 1;
      const warmupMs = warmedOnStart.has(pair) ? 0 : (costs.startWarmups?.[pair] ?? 0);
      warmedOnStart.add(pair);
      const measured = trialMs.ms === undefined ? undefined : trialMs.ms + warmupMs;
      config.measureMs = sum(config.measureMs, measured);
      ms = sum(ms, measured);
    }
    return ms;
  };
  const lanes = Math.max(1, experiment.lanes?.length ?? 1);
  const shares = Array.from({ length: lanes }, (_, lane): LanePrediction => ({ name: laneName(experiment, lane), starts: 0, trials: 0, ms: 0 }));
  const pool = new LanePool(plan.trials, lanes);
  const open = new Set(shares.keys());
  while (open.size > 0) {
    // The lane free first takes the next stretch; an unknown figure orders lanes as 0 would, their wall time stays unknown.
    const lane = [...open].sort((a, b) => (shares[a]!.ms ?? 0) - (shares[b]!.ms ?? 0))[0]!;
    const stretch = pool.take(lane);
    pool.finished(lane);
    if (stretch.length === 0) open.delete(lane);
    else {
      const share = shares[lane]!;
      share.ms = sum(share.ms, stretchMs(stretch));
      share.starts += 1;
      share.trials += stretch.length;
    }
  }
  const clocks = shares.map((share) => share.ms);
  const list = [...configs.values()];
  const starts = list.reduce((total, config) => total + config.starts, 0);
  const startupTotalMs = list.reduce<number | undefined>((total, config) => sum(total, times(config.starts, config.startupMs.ms)), 0);
  const measureMs = list.reduce<number | undefined>((total, config) => sum(total, config.measureMs), 0);
  const wallMs = clocks.reduce<number | undefined>(
    (slowest, clock) => (slowest === undefined || clock === undefined ? undefined : Math.max(slowest, clock)),
    0,
  );
  const gpusPerServer = experiment.budget?.gpusPerServer ?? 1;
  return {
    trials: plan.trials.length,
    starts,
    restarts: Math.max(0, starts - shares.filter((share) => share.starts > 0).length),
    startupTotalMs,
    measureMs,
    wallMs,
    // Every lane holds its GPUs for the whole run.
    gpuHours: wallMs === undefined ? undefined : (wallMs / 3_600_000) * gpusPerServer * lanes,
    gpusPerServer,
    ...(lanes > 1 && { lanes, laneShares: shares, oneLaneStarts: countRestarts(plan.trials) + (plan.trials.length > 0 ? 1 : 0) }),
    configs: list,
    sources: SOURCE_ORDER.filter((source) => sources.has(source)),
    ...(uncounted.size > 0 && { uncountedPasses: [...uncounted] }),
  };
}

function sum(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a + b;
}

/** A config started 0 times costs nothing, even when its startup is unknown. */
function times(count: number, ms: number | undefined): number | undefined {
  return count === 0 ? 0 : ms === undefined ? undefined : count * ms;
}
