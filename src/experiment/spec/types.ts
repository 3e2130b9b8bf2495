import type { SlurmLaneSettings } from '../../exec/config.js';
import type { ExecutorConfig } from '../../exec/types.js';
import type { PortRange } from '../../launch/port-range.js';
import type { PromptSource, Slo, TokenCountSource, Workload } from '../../load/types.js';
import { JUDGED_METRICS, type JudgedMetric } from '../../metrics/catalog.js';
import type { BackendKind } from '../../profiles/types.js';
import type { PreflightMode } from '../../telemetry/preflight.js';
import type { TelemetryConfig } from '../../telemetry/trial.js';
import type { Knob } from '../search/types.js';
import type { Comparison } from './constraint.js';

/** How one server is started; variants with an identical ServerConfig share a server (same serverKey). */
export interface ServerConfig {
  /** Built-in profile name. */
  profile: string;
  command: string[];
  env: Record<string, string>;
  unsetEnv: string[];
  cwd?: string;
  /** Fixed port; absent: a free one per launch. Not part of the server key. */
  port?: number;
  /** Where that free one is picked (inclusive); absent: below the ephemeral range. Not part of the server key. */
  portRange?: PortRange;
  readyTimeoutMs: number;
  verifyServing: boolean;
  model?: string;
}

/** Load-client settings; they never influence which server a variant needs. */
export interface ClientConfig {
  prompts: PromptSource;
  warmup: WarmupConfig;
  ignoreEos: boolean;
  requestTimeoutMs: number;
  backend?: BackendKind;
  model?: string;
  slo?: Slo;
  cache: CacheMode;
  tokenizerPath?: string;
  /** `client.contextTokens`: see schema.ts. */
  contextTokens?: number;
  workers?: number | 'auto';
  requireFullOutput?: boolean;
  tokenCounts?: TokenCountSource;
}

/** `client.warmup` resolved (`client.warmupRequests` maps onto `requests`); see schema.ts. */
export interface WarmupConfig {
  requests: number;
  /** `seconds`, in ms: rounds until this long has passed instead of a count. */
  durationMs?: number;
  perWorkload: boolean;
}

/** See `client.cache` in schema.ts. */
export type CacheMode = 'cold' | 'warm' | 'reset';

export interface ResolvedVariant {
  name: string;
  /** Grid parameter values that produced this variant (empty for hand-written variants). */
  params: Record<string, string | number>;
  server: ServerConfig;
  serverKey: string;
  client: ClientConfig;
}

export interface ResolvedWorkload {
  /** e.g. "single-stream", "c=8", "rate=4/s" — the trials.workload column. */
  label: string;
  workload: Workload;
  concurrency?: number;
  /** The prompts its trials send instead of the variant's client.prompts: a trace workload's own trace. */
  prompts?: PromptSource;
}

/** The metrics a file can name as `metric`, an objective or a constraint (the catalogue's `judged` ones): verdicts and drift alarms compare them. */
export const METRIC_NAMES = JUDGED_METRICS;
export type MetricName = JudgedMetric;

/** The experiment after defaults, grid expansion and sweep expansion; stored as runs.config_json so a resume replays it. */
export interface ResolvedExperiment {
  name: string;
  description?: string;
  /** Absolute path of the experiment file. */
  filePath: string;
  baseline: string;
  metric: MetricName;
  trials: number;
  seed: number;
  /** Significance level and smallest relative effect (0.02 = 2%) that counts as a difference. */
  verdict: { alpha: number; minEffect: number };
  /** Noise band of the drift alarm: max(relativeBand, sigmas × robust spread of the history). */
  drift: { relativeBand: number; sigmas: number };
  /**
   * A trial is valid when the server stayed alive and reachable throughout and at most maxFailedFraction of its
   * requests failed; an invalid one is re-run in place up to trialRetries times. Absent in runs stored before.
   */
  validity?: { maxFailedFraction: number; trialRetries: number };
  executor: ExecutorConfig;
  /** `lanes:` (places servers run at the same time); absent: one lane, on `executor`. */
  lanes?: ResolvedLane[];
  fingerprint: { envPatterns: string[]; redact: string[] };
  /** Absent in runs stored before preflight existed: treated as 'warn'. */
  preflight?: PreflightMode;
  /** Absent in runs stored before telemetry existed: the defaults. */
  telemetry?: TelemetryConfig;
  variants: ResolvedVariant[];
  workloads: ResolvedWorkload[];
  /** Campaign settings; absent in runs stored before they existed (= interleaved, fixed, no budget). */
  schedule?: ScheduleSetting;
  passes?: number;
  budget?: Budget;
  /** `cost:` with its GPU count resolved. */
  cost?: { gpuHourUsd: number; gpus: number };
  maxRestarts?: number;
  stopping?: 'fixed' | 'race';
  objective?: Objective;
  /** Absent when the file asks for no quality check. */
  quality?: { equivalence?: EquivalenceSettings; accuracy?: AccuracySettings };
  /** `search:`: its valid points are variants (params = knob values); the strategy picks which to measure. */
  search?: ResolvedSearch;
}

/** One lane: its overrides of the experiment's server env, port range and executor. */
export interface ResolvedLane {
  /** `lanes[i].name`, default lane<i+1>. */
  name: string;
  env: Record<string, string>;
  portRange?: PortRange;
  executor?: ExecutorConfig;
  /** With executor kind slurm: the lane's sbatch settings over the executor's (its job's `#SBATCH` lines). */
  slurm?: SlurmLaneSettings;
}

/** The `search:` section resolved (spec/search-space.ts); its points are the variants whose params name every knob. */
export interface ResolvedSearch {
  knobs: Knob[];
  /** Combinations of knob values before the constraints. */
  combinations: number;
  constraints: string[];
  tolerance: number;
  confidence: number;
  /** Trials of each workload a point's one start runs in a block (absent in runs stored before it: 1). */
  trialsPerStart?: number;
  tieBreak: TieBreakEntry[];
  budget?: { gpuHours?: number; wallTimeMs?: number; gpusPerServer: number };
}

/** Among points within the tolerance: a knob ascending (or descending), or a metric at its better end. */
export type TieBreakEntry = { kind: 'knob'; name: string; descending: boolean } | { kind: 'metric'; metric: MetricName };

/** quality.accuracy after defaults: the sample set (absolute path), its scorer, and how much of it is sent. */
export interface AccuracySettings {
  path: string;
  format: 'jsonl' | 'csv';
  /** As written: exact, last-number, choice or regex:<pattern> (metrics/answer-score.ts). */
  scorer: string;
  /** Records sent from the top of the file; undefined: all. */
  items?: number;
  outputTokens: number;
  fields: { prompt: string; answer: string; category: string };
}

/** quality.equivalence after defaults: how many prompts, answered with how many tokens (temperature 0, ignore_eos). */
export interface EquivalenceSettings {
  prompts: number;
  outputTokens: number;
}

export type ScheduleSetting = 'interleaved' | 'blocked' | 'auto';

export interface Budget {
  wallTimeMs?: number;
  gpuHours?: number;
  gpusPerServer: number;
}

export interface Constraint {
  metric: MetricName;
  op: '<' | '<=' | '>' | '>=';
  value: number;
}

/** What "best config" means: one metric to optimise on one workload, subject to constraints. */
export interface Objective {
  metric: MetricName;
  direction: 'maximize' | 'minimize';
  workload: string;
  constraints: Constraint[];
  /** subjectTo.outputs: only configs whose answers are equivalent within the A/A floor are feasible (analysis/feasibility.ts). */
  outputs?: 'equivalent';
  /** subjectTo.outputMatch: token agreement with the baseline's greedy answers (analysis/equivalence.ts). */
  outputMatch?: { op: Constraint['op']; value: number };
  /** subjectTo.accuracy: quality.accuracy's share, against a value or the baseline's plus an offset (spec/constraint.ts). */
  accuracy?: Comparison;
}

export interface PlannedTrial {
  /** Position in execution order. */
  index: number;
  block: number;
  /** Repetition of this (variant, workload) pair; equals the block since each block runs every pair once. */
  repetition: number;
  variant: string;
  serverKey: string;
  workload: string;
}

export interface Plan {
  /** Absent in plans stored before schedules existed: interleaved. */
  schedule?: 'interleaved' | 'blocked';
  seed: number;
  blocks: number;
  /** Server starts the plan needs beyond the first (consecutive trials on the same serverKey share a server). */
  restarts: number;
  trials: PlannedTrial[];
}

/** One row of a run's verdict table: a variant vs the baseline on one workload. */
export interface VariantVerdict extends Verdict {
  variant: string;
  workload: string;
  metric: MetricName;
  baselineMedian: number | null;
  candidateMedian: number | null;
  /** Failed requests inside the counted trials (within maxFailedFraction); absent in runs finalized before. */
  failedRequests?: { baseline: number; candidate: number };
  /** Trials measured but not counted (server died, requests failed), re-run in place. */
  invalidTrials?: { baseline: number; candidate: number };
}

export type VerdictLabel = 'faster' | 'slower' | 'no significant difference' | 'insufficient data';

/** How a candidate variant compares with the baseline on one metric. Null figures: not computable (see label). */
export interface Verdict {
  /** median(candidate) / median(baseline). */
  ratio: number | null;
  /** Bootstrap confidence interval of the ratio, at level 1 − alpha. */
  ciLow: number | null;
  ciHigh: number | null;
  /** Two-sided rank-sum permutation p-value (stratified by block for a blocked schedule). */
  pValue: number | null;
  significant: boolean;
  label: VerdictLabel;
  n: { baseline: number; candidate: number };
}
