import { median } from 'simple-statistics';
import { configKey } from '../../launch/config.js';
import { recentReadyMs, recentTrialDurationsMs } from '../../store/campaign.js';
import type { Db } from '../../store/db.js';
import type { Plan, ResolvedExperiment, ServerConfig } from '../spec/types.js';

/** Stated fallbacks when the store has no history: a mid-size model load, and a minute of measurement. */
export const DEFAULT_STARTUP_MS = 5 * 60_000;
export const DEFAULT_TRIAL_MS = 60_000;

export interface Estimate {
  ms: number;
  /** history: median of `samples` recorded values; default: no history, the stated fallback. */
  source: 'history' | 'default';
  samples: number;
}

/** Predicted startup per server config and duration per (variant, workload) trial, keyed as the plan keys them. */
export interface CostModel {
  startups: Record<string, Estimate>;
  trials: Record<string, Estimate>;
}

export interface ConfigPrediction {
  serverKey: string;
  variants: string[];
  starts: number;
  trials: number;
  startupMs: Estimate;
  /** Measuring time of this config's planned trials. */
  measureMs: number;
}

export interface PlanPrediction {
  trials: number;
  starts: number;
  restarts: number;
  startupTotalMs: number;
  measureMs: number;
  wallMs: number;
  gpuHours: number;
  gpusPerServer: number;
  configs: ConfigPrediction[];
  /** True when any figure fell back to a default. */
  usesDefaults: boolean;
}

/** The history key the runner records a config's startups under (shared with `servelab launch`). */
export function startupKeyOf(server: ServerConfig): string {
  return configKey({ command: server.command, env: server.env, unsetEnv: server.unsetEnv, profile: server.profile });
}

export function costPairKey(variant: string, workload: string): string {
  return JSON.stringify([variant, workload]);
}

/**
 * Costs from the store: median of the config's last startups, and of the pair's recorded trial durations in this
 * experiment (any variant of the same workload when the pair has none). Without a store: stated defaults.
 */
export function loadCostModel(db: Db | undefined, experiment: ResolvedExperiment): CostModel {
  const startups: Record<string, Estimate> = {};
  const trials: Record<string, Estimate> = {};
  for (const variant of experiment.variants) {
    startups[variant.serverKey] ??= estimate(db ? recentReadyMs(db, startupKeyOf(variant.server)) : [], DEFAULT_STARTUP_MS);
    for (const { label } of experiment.workloads) {
      const own = db ? recentTrialDurationsMs(db, { experimentName: experiment.name, workload: label, variant: variant.name }) : [];
      const any = own.length > 0 || !db ? own : recentTrialDurationsMs(db, { experimentName: experiment.name, workload: label });
      trials[costPairKey(variant.name, label)] = estimate(any, DEFAULT_TRIAL_MS);
    }
  }
  return { startups, trials };
}

function estimate(values: number[], fallback: number): Estimate {
  return values.length > 0 ? { ms: median(values), source: 'history', samples: values.length } : { ms: fallback, source: 'default', samples: 0 };
}

/** Wall time and GPU-hours of a plan, run one server at a time: every start of a config plus every trial. */
export function predictPlan(plan: Pick<Plan, 'trials'>, experiment: ResolvedExperiment, costs: CostModel): PlanPrediction {
  const configs = new Map<string, ConfigPrediction>();
  const defaultEstimate: Estimate = { ms: DEFAULT_TRIAL_MS, source: 'default', samples: 0 };
  let usesDefaults = false;
  let previousKey: string | undefined;
  for (const trial of plan.trials) {
    let config = configs.get(trial.serverKey);
    if (!config) {
      const startupMs = costs.startups[trial.serverKey] ?? { ms: DEFAULT_STARTUP_MS, source: 'default', samples: 0 };
      const variants = experiment.variants.filter((variant) => variant.serverKey === trial.serverKey).map((variant) => variant.name);
      config = { serverKey: trial.serverKey, variants, starts: 0, trials: 0, startupMs, measureMs: 0 };
      configs.set(trial.serverKey, config);
    }
    if (trial.serverKey !== previousKey) config.starts += 1;
    previousKey = trial.serverKey;
    const trialMs = costs.trials[costPairKey(trial.variant, trial.workload)] ?? defaultEstimate;
    usesDefaults ||= trialMs.source === 'default' || config.startupMs.source === 'default';
    config.trials += 1;
    config.measureMs += trialMs.ms;
  }
  const list = [...configs.values()];
  const starts = list.reduce((sum, config) => sum + config.starts, 0);
  const startupTotalMs = list.reduce((sum, config) => sum + config.starts * config.startupMs.ms, 0);
  const measureMs = list.reduce((sum, config) => sum + config.measureMs, 0);
  const wallMs = startupTotalMs + measureMs;
  const gpusPerServer = experiment.budget?.gpusPerServer ?? 1;
  return {
    trials: plan.trials.length,
    starts,
    restarts: Math.max(0, starts - 1),
    startupTotalMs,
    measureMs,
    wallMs,
    gpuHours: (wallMs / 3_600_000) * gpusPerServer,
    gpusPerServer,
    configs: list,
    usesDefaults,
  };
}
