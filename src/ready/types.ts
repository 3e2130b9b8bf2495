import type { PhaseTiming } from '../store/types.js';

// Stored with each startup (for the next prediction), so defined by the store layer below.
export type { PhaseTiming } from '../store/types.js';

/** Where a readiness wait stands; emitted on every change and periodically while waiting. */
export interface ReadyProgress {
  elapsedMs: number;
  /** Current phase: a log phase ("loading weights"), or a probe phase ("waiting for /health", "checking generation"). */
  phase: string;
  /** Time-to-ready recorded for the last startup of the same config, when known. */
  previousReadyMs?: number;
  /** Estimated time left, anchored on the current phase when the last startup went through it too. */
  predictedRemainingMs?: number;
  detail?: string;
}

/** How a server process ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ReadyResult {
  baseUrl: string;
  elapsedMs: number;
  /** Model name confirmed by /v1/models (or given), when the serving check ran. */
  model?: string;
  phases: PhaseTiming[];
  /** Which checks passed: health, models, generation. */
  checks: string[];
}

/** Why a wait ended without a ready server. */
/** wrong-server: what answers on the port is not the process that was launched (another server holds the port). */
/** engine-dead: the server answers, but says its engine died (vLLM's /health 503): it will not become ready. */
export type NotReadyKind = 'timeout' | 'process-exited' | 'fatal-log' | 'engine-dead' | 'unreachable' | 'bad-response' | 'wrong-server' | 'aborted';
