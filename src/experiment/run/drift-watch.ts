import { diffFingerprints } from '../../fingerprint/diff.js';
import type { Fingerprint } from '../../fingerprint/types.js';
import { getFingerprint, listTrials, variantHistory } from '../../store/queries.js';
import type { TrialRecord } from '../../store/types.js';
import type { TelemetrySummary } from '../../telemetry/types.js';
import { formatWholePercent } from '../../util/format.js';
import { pairKey } from '../../util/trial-keys.js';
import { type DriftCheck, driftDecision, formatDriftAlarm, MAX_USEFUL_BAND_PCT } from '../analysis/drift.js';
import { metricUnit, metricValue } from '../spec/metrics.js';
import type { Plan, PlannedTrial } from '../spec/types.js';
import type { RunContext } from './context.js';
import { attributeDrift } from './machine.js';
import { sameConfiguration } from './reference-guard.js';

/** After each stored valid trial: the drift alarm message when the run must stop, else undefined. */
export type DriftWatch = (trial: PlannedTrial, fingerprint: Fingerprint, machine: TelemetrySummary | undefined) => string | undefined;

/**
 * Apply the drift rule (analysis/drift.ts: driftDecision) to a pair's trials of this run against the pair's history.
 * A pair's drift is confirmed by its second trial when the plan gives it one. Alarms are stored (through the
 * journal) and stop the run unless drift is accepted.
 */
export function driftWatch(context: RunContext, plan: Plan): DriftWatch {
  const pairTrials = new Map<string, number>();
  for (const trial of plan.trials) pairTrials.set(pairKey(trial), (pairTrials.get(pairKey(trial)) ?? 0) + 1);
  const { db, runId, experiment, log } = context;
  // With lanes, each lane is judged against its own level: a slower lane is not a drift of the config.
  const lane = context.lane?.index;
  const onLane = (stored: TrialRecord) => lane === undefined || (stored.lane ?? 0) === lane;
  const metricOf = (metrics: TrialRecord['metrics']) => metricValue(metrics, experiment.metric);
  return (trial, fingerprint, machine) => {
    const own = listTrials(db, runId)
      .filter((stored) => pairKey(stored) === pairKey(trial) && onLane(stored))
      .map((stored) => metricOf(stored.metrics))
      .filter((value) => Number.isFinite(value));
    if (own.length === 0 || own.length > 2) return undefined;
    // Valid trials of finished runs only (never this run, a concurrent one, or a failed one), on this configuration.
    const history = sameConfiguration(
      db,
      variantHistory(db, { experimentName: experiment.name, variant: trial.variant, workload: trial.workload, excludeRunId: runId }).filter(onLane),
      fingerprint,
    );
    const values = history.map((past) => metricOf(past.metrics)).filter((past) => Number.isFinite(past));
    if (values.length === 0) return undefined;
    const decision = driftDecision(own, values, { ...experiment.drift, confirmable: (pairTrials.get(pairKey(trial)) ?? 1) >= 2 });
    if (!decision) return undefined;
    const { check } = decision;
    const pair = `${trial.variant} ${trial.workload}`;
    if (check.unguarded) log(unguardedNote(pair, check, values.length));
    switch (decision.kind) {
      case 'ok':
        return undefined;
      case 'suspect':
        log(`${pair} is ${formatWholePercent(check.changePct)} off its history (band ±${check.band.toFixed(0)}%); confirming with its next trial`);
        return undefined;
      case 'not-confirmed':
        log(`${pair}: deviation not confirmed by its second trial (${formatWholePercent(check.changePct)}, band ±${check.band.toFixed(0)}%); continuing`);
        return undefined;
      case 'alarm':
        return raiseAlarm(context, trial, check, history, fingerprint, machine);
    }
  };
}

/** Store the alarm with the fingerprint and machine-state differences that may explain it; its message unless accepted. */
function raiseAlarm(
  context: RunContext,
  trial: PlannedTrial,
  check: DriftCheck,
  history: readonly TrialRecord[],
  fingerprint: Fingerprint,
  machine: TelemetrySummary | undefined,
): string | undefined {
  const { db, experiment, log } = context;
  const recorded = getFingerprint(db, history[0]!.fingerprintId);
  const changes = recorded ? diffFingerprints(recorded, fingerprint) : [];
  const machineChanges = attributeDrift(
    db,
    history.map((past) => past.id),
    machine,
  );
  const alarm = formatDriftAlarm({
    variant: trial.variant,
    metricLabel: metricUnit(experiment.metric),
    current: check.current,
    reference: check.reference,
    changePct: check.changePct,
    changes,
    machine: machineChanges,
  });
  const message = `drift alarm (${trial.workload}, noise band ±${check.band.toFixed(0)}%): ${alarm}`;
  log(message);
  context.journal.driftAlarm({
    variant: trial.variant,
    workload: trial.workload,
    metric: experiment.metric,
    current: check.current,
    reference: check.reference,
    changePct: check.changePct,
    bandPct: check.band,
    changes,
    machine: machineChanges,
    accepted: context.acceptDrift,
    message,
  });
  if (context.acceptDrift) {
    log('continuing (--accept-drift)');
    return undefined;
  }
  return message;
}

function unguardedNote(pair: string, check: DriftCheck, historySize: number): string {
  return check.unguarded === 'history too noisy'
    ? `${pair}: history too noisy to guard against drift (band ±${check.band.toFixed(0)}% > ${MAX_USEFUL_BAND_PCT}% over ${historySize} trials): only a change beyond the band stops the run`
    : `${pair}: history too short to guard against drift (${historySize} trials of finished runs)`;
}
