/** Assembles everything a report of one run needs from the store's read-only views. */

import type { RequestSample } from '../metrics/types.js';
import type { Db } from '../store/db.js';
import { listDriftAlarms } from '../store/drift-alarms.js';
import { getRun, listTrials, type RunDetail, trialHealth, trialSamples } from '../store/queries.js';
import { fingerprintsByIds, trialLatencies, viewedRuns } from '../store/reads.js';
import type { UnreadableRow } from '../store/row-json.js';
import { runTelemetry } from '../store/telemetry.js';
import type { TrialRecord } from '../store/types.js';
import type { RunData } from './model.js';

/**
 * Everything a report needs about one run, its status as views show it (viewedRuns); undefined when the run is not
 * in the store. Stored values that cannot be read are left out and listed in `unreadable`.
 */
export function loadRunData(db: Db, runId: number, options: { latencies?: boolean } = {}): RunData | undefined {
  const found = getRun(db, runId);
  if (!found) return undefined;
  const [run] = viewedRuns(db, [found]);
  const unreadable: UnreadableRow[] = [];
  const trials = listTrials(db, runId, unreadable);
  return {
    run: run!,
    trials,
    fingerprints: fingerprintsByIds(
      db,
      trials.map((trial) => trial.fingerprintId),
      unreadable,
    ),
    // Samples are the bulk of the store; callers that draw no latency chart skip them.
    latencies:
      options.latencies === false
        ? new Map()
        : trialLatencies(
            db,
            trials.map((trial) => trial.id),
          ),
    health: trialHealth(db, runId),
    telemetry: runTelemetry(db, runId, unreadable),
    driftAlarms: listDriftAlarms(db, runId, unreadable),
    unreadable,
  };
}

/** What `servelab export` writes: a run's readable trials and, for request-level formats, their requests. */
export interface ExportData {
  run: RunDetail;
  trials: TrialRecord[];
  /** Requests per trial id; empty when not asked for. */
  samples: Map<number, RequestSample[]>;
  /** Stored values left out (each also warned on stderr). */
  unreadable: UnreadableRow[];
}

export function loadExportData(db: Db, runId: number, options: { samples: boolean }): ExportData | undefined {
  const run = getRun(db, runId);
  if (!run) return undefined;
  const unreadable: UnreadableRow[] = [];
  const trials = listTrials(db, runId, unreadable);
  const samples = new Map(options.samples ? trials.map((trial) => [trial.id, trialSamples(db, trial.id, unreadable)]) : []);
  return { run, trials, samples, unreadable };
}
