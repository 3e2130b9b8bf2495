import type { Fingerprint } from '../../fingerprint/types.js';
import type { BenchProgress, RequestSample } from '../../load/types.js';
import { recordStartupOutcome } from '../../ready/history.js';
import { type AccuracyPass, insertAccuracyPass } from '../../store/accuracy.js';
import type { RaceEvent } from '../../store/campaign.js';
import { recordRaceEvent } from '../../store/campaign.js';
import type { Db } from '../../store/db.js';
import { type DriftAlarmRecord, insertDriftAlarm } from '../../store/drift-alarms.js';
import { type EquivalencePass, insertEquivalencePass } from '../../store/equivalence.js';
import type { Lease } from '../../store/lease.js';
import {
  type InvalidTrial,
  insertInvalidTrial,
  insertServer,
  insertTrial,
  type NewTrial,
  type ServerRowStart,
  type ServerRowUpdate,
  setRunPlan,
  setRunStatus,
  updateServer,
  upsertProgress,
} from '../../store/runs.js';
import { recordSearchStep, type StoredSearchStep } from '../../store/search.js';
import type { RunStatus } from '../../store/types.js';
import type { TrialTelemetry } from '../../telemetry/types.js';

/** Progress rows are for humans and `servelab ui`; a few writes a second are plenty. */
const PROGRESS_INTERVAL_MS = 250;

/** Runs `write` in one transaction that first checks the run's lease is still this runner's (see Lease.fenced). */
export type Fence = <T>(write: () => T) => T;

/**
 * Every store write of one runner on one run. Each goes through the run's lease (one transaction that checks the
 * lease first): a runner that lost its run to another, e.g. after being paused past the stale period, cannot write
 * a trial, a status or a server row any more, and `signal` aborts so it stops measuring at once.
 */
export class RunJournal {
  readonly fence: Fence;
  /** Aborted when the lease is lost or its heartbeat failed; the reason is the error to report. */
  readonly signal: AbortSignal;
  /** When each lane (0 without lanes) last wrote its progress: lanes are throttled apart, never by each other. */
  private readonly lastProgressAt = new Map<number, number>();

  constructor(
    private readonly db: Db,
    readonly runId: number,
    lease: Lease,
  ) {
    this.fence = (write) => lease.fenced(write);
    this.signal = lease.signal;
  }

  runStatus(status: RunStatus, message?: string): void {
    this.fence(() => setRunStatus(this.db, this.runId, status, message));
  }

  serverStarting(row: Omit<ServerRowStart, 'runId' | 'runnerPid'>): number {
    return this.fence(() => insertServer(this.db, { ...row, runId: this.runId, runnerPid: process.pid }));
  }

  serverUpdate(rowId: number, update: ServerRowUpdate): void {
    this.fence(() => updateServer(this.db, rowId, update));
  }

  /** Startup history shared with `servelab launch` (ready/history.ts). */
  startupOutcome(configKey: string, startedAt: Date, outcome: unknown): void {
    this.fence(() => recordStartupOutcome(this.db, configKey, startedAt, outcome, this.runId));
  }

  /**
   * The trial in flight, at most every PROGRESS_INTERVAL_MS (and its last step). Progress is for humans: a store
   * that refuses it (locked, full) fails the trial's own write right after, and a lost lease aborts `signal`.
   */
  progress(trialLabel: string, progress: BenchProgress, warmingUp: boolean, lane?: { index: number; name: string }): void {
    const now = Date.now();
    if (now - (this.lastProgressAt.get(lane?.index ?? 0) ?? 0) < PROGRESS_INTERVAL_MS && progress.completed < progress.total) return;
    this.lastProgressAt.set(lane?.index ?? 0, now);
    // Warm-up requests are not the trial's: show that it is warming up, never their counts as the trial's.
    const update = {
      ...(lane && { lane }),
      trialLabel: `${trialLabel}${warmingUp ? ', warming up' : ''}`,
      completed: warmingUp ? 0 : progress.completed,
      total: warmingUp ? 0 : progress.total,
      outputTokensPerSecond: warmingUp ? 0 : progress.outputTokensPerSecond,
    };
    try {
      this.fence(() => upsertProgress(this.db, this.runId, update));
    } catch {
      // reported by the trial's own write
    }
  }

  /** A valid trial with its fingerprint, samples and telemetry; undefined when that trial was stored already. */
  validTrial(trial: Omit<NewTrial, 'runId'>, fingerprint: Fingerprint, samples: readonly RequestSample[], telemetry?: TrialTelemetry): number | undefined {
    return this.fence(() => insertTrial(this.db, { ...trial, runId: this.runId }, fingerprint, samples, telemetry));
  }

  invalidTrial(trial: Omit<InvalidTrial, 'runId'>): void {
    this.fence(() => insertInvalidTrial(this.db, { ...trial, runId: this.runId }));
  }

  driftAlarm(alarm: Omit<DriftAlarmRecord, 'raisedAt'>): void {
    this.fence(() => insertDriftAlarm(this.db, this.runId, alarm));
  }

  raceEvent(event: RaceEvent): void {
    this.fence(() => recordRaceEvent(this.db, this.runId, event));
  }

  /** A search's decision and the plan grown by the block it asks for, together: a resume finds both or neither. */
  searchStep(step: Omit<StoredSearchStep, 'createdAt'>, plan: object): void {
    this.fence(() => {
      recordSearchStep(this.db, this.runId, step);
      setRunPlan(this.db, this.runId, plan);
    });
  }

  equivalencePass(pass: EquivalencePass): void {
    this.fence(() => insertEquivalencePass(this.db, this.runId, pass));
  }

  accuracyPass(pass: AccuracyPass): void {
    this.fence(() => insertAccuracyPass(this.db, this.runId, pass));
  }
}
