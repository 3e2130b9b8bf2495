import type { Fingerprint } from '../fingerprint/types.js';
import type { CategoryFigures, MetricFigures } from '../metrics/catalog.js';
import type { CapacitySearch, OutputLength, TokenCountCheck } from '../metrics/types.js';

/** One startup phase (from a server's log) and when it began. */
export interface PhaseTiming {
  phase: string;
  /** Milliseconds from launch (or wait start) to the first time this phase was seen. */
  startMs: number;
  durationMs: number;
}

/**
 * The figures of one trial that verdicts, drift alarms and reports use: the catalogue's metrics (metrics/catalog.ts;
 * NaN where a figure every trial has could not be measured), and what the trial's work looked like.
 */
export interface TrialMetrics extends MetricFigures {
  completed: number;
  failed: number;
  /** SGLang's adaptive speculative tier in force at the trial's end: draft steps and draft tokens (SpecDecodeStats.adaptiveTier). */
  specNumSteps?: number;
  specNumDraftTokens?: number;
  /** The workload's designed prefix-cache hit rate (shared prefixes, conversation history), beside the achieved one. */
  prefixCacheTargetHitRate?: number;
  /** Multi-turn sessions: TTFT p50 of each turn (index 0 = turn 1), and sessions a failed turn ended. */
  ttftMedianByTurnMs?: number[];
  sessionsEndedByFailure?: number;
  /** Share of drafts accepted at each draft position (0 = first), where the engine reports it. */
  acceptanceByPosition?: number[];
  /** Per dataset category, when the workload's prompts have categories. */
  byCategory?: Record<string, CategoryMetrics>;
  /** Requested vs generated output tokens; present when some request stopped short or ran over (unequal work). */
  outputLength?: OutputLength;
  /** Which output-token count the figures use, and in how many requests the sources disagreed. */
  tokenCounts?: { method: string; checked: number; disagreeing: number; severalPerEvent?: TokenCountCheck['severalPerEvent'] };
  /** Requests resent after a kept-alive connection closed under them. */
  resends?: number;
  /** Open loop: the offered rate and the rate the server actually served. */
  rate?: { offeredPerSecond: number; servedPerSecond: number; queuedByCap: number; maxLagMs: number };
  /** 1: the variant's first trial of this workload after its server started, 2 the next… (absent in older runs). */
  afterStart?: number;
  /** Capacity workload: the search's path (its result is the catalogue's sloCapacity). */
  capacity?: CapacitySearch;
}

/** The catalogue's per-category figures of one dataset category, and its request counts. */
export interface CategoryMetrics extends CategoryFigures {
  completed: number;
  failed: number;
}

export type RunStatus = 'running' | 'done' | 'failed' | 'interrupted' | 'drift';

export interface RunRecord {
  id: number;
  experimentId: number;
  experimentName: string;
  startedAt: string;
  finishedAt?: string;
  status: RunStatus;
  /** Why the run stopped, when it did not finish. */
  message?: string;
  servelabVersion: string;
  gitSha?: string;
}

export interface TrialRecord {
  id: number;
  runId: number;
  variant: string;
  /** Identifies the server configuration (command + env); trials sharing it reuse one server. */
  serverKey: string;
  /** Workload level label, e.g. "c=8". */
  workload: string;
  concurrency?: number;
  /** Sweep-grid parameter values of this trial's variant, e.g. {steps: 3, draft_tokens: 4}. */
  params: Record<string, string | number>;
  block: number;
  repetition: number;
  startedAt: string;
  finishedAt: string;
  metrics: TrialMetrics;
  /** How the trial met the server's prefix cache ("cold (salt N)", "warm"); absent for trials stored before it was recorded. */
  cache?: string;
  /** Index of the lane it ran on (experiment `lanes:`, from 0); absent without lanes. */
  lane?: number;
  fingerprintId: number;
}

export interface FingerprintRecord {
  id: number;
  hash: string;
  fingerprint: Fingerprint;
}

/** One server startup, kept so the next wait on the same config can predict its time to ready. */
export interface StartupRecord {
  id: number;
  configKey: string;
  startedAt: string;
  readyMs?: number;
  outcome: 'ready' | 'failed';
  phases: PhaseTiming[];
  runId?: number;
}
