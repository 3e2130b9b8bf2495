import { type Db, defaultStorePath, openStore } from '../store/db.js';
import { lastReadyStartup, recordStartup } from '../store/startups.js';
import { messageOf } from '../util/errors.js';
import { NotReadyError } from './errors.js';
import type { PhaseTiming, ReadyResult } from './types.js';

/** The last successful startup's time to ready ("last ready after Ns") and phase timings, as wait/launch options take them. */
export function previousStartupOptions(db: Db | undefined, configKey: string): { previousReadyMs?: number; previousPhases?: PhaseTiming[] } {
  const last = db && lastReadyStartup(db, configKey);
  if (last?.readyMs === undefined) return {};
  return { previousReadyMs: last.readyMs, previousPhases: last.phases };
}

/**
 * Record how a startup ended. Interruptions and usage errors say nothing about the server, so only ready
 * startups and real failures (timeout, death, fatal log, bad answers) are kept.
 */
export function recordStartupOutcome(db: Db, configKey: string, startedAt: Date, outcome: ReadyResult | unknown, runId?: number): void {
  const base = { configKey, startedAt: startedAt.toISOString(), ...(runId !== undefined && { runId }) };
  if (isReadyResult(outcome)) {
    recordStartup(db, { ...base, outcome: 'ready', readyMs: outcome.elapsedMs, phases: outcome.phases });
  } else if (outcome instanceof NotReadyError && outcome.kind !== 'aborted') {
    recordStartup(db, { ...base, outcome: 'failed', phases: outcome.phases });
  }
}

function isReadyResult(value: unknown): value is ReadyResult {
  return typeof value === 'object' && value !== null && 'checks' in value && 'baseUrl' in value;
}

/**
 * The store for startup history, or undefined (with a warning) when it cannot be opened: a missing prediction
 * must not stop a wait or a launch.
 */
export function openHistory(storeOption: string | undefined, warn: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): Db | undefined {
  try {
    return openStore(defaultStorePath(storeOption));
  } catch (error) {
    warn(`servelab: warning: startup history unavailable (${messageOf(error)}); continuing without "last ready after"`);
    return undefined;
  }
}
