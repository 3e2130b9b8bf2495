/** Assembles everything a report of one run needs from the store's read-only views. */
import type { Db } from '../store/db.js';
import { listDriftAlarms } from '../store/drift-alarms.js';
import { getRun, listTrials, trialHealth } from '../store/queries.js';
import { fingerprintsByIds, trialLatencies } from '../store/reads.js';
import { runTelemetry } from '../store/telemetry.js';
import type { RunData } from './model.js';

/** Everything a report needs about one run; undefined when the run is not in the store. */
export function loadRunData(db: Db, runId: number, options: { latencies?: boolean } = {}): RunData | undefined {
  const run = getRun(db, runId);
  if (!run) return undefined;
  const trials = listTrials(db, runId);
  return {
    run,
    trials,
    fingerprints: fingerprintsByIds(
      db,
      trials.map((trial) => trial.fingerprintId),
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
    telemetry: runTelemetry(db, runId),
    driftAlarms: listDriftAlarms(db, runId),
  };
}
