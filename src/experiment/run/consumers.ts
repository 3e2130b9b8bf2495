import type { Fingerprint } from '../../fingerprint/types.js';
import type { BenchProgress } from '../../load/types.js';
import { serverBehindLine } from '../../metrics/table.js';
import { formatNumber, formatTrialNumber } from '../../util/format.js';
import { metricUnit, metricValue, trialMetricsOf } from '../spec/metrics.js';
import type { PlannedTrial } from '../spec/types.js';
import type { RunContext } from './context.js';
import type { DriftWatch } from './drift-watch.js';
import type { MeasuredTrial, TrialProgress } from './trial.js';

/** Who follows a lane's trials live besides the journal. */
export interface TrialWatch {
  progress: (trialName: string, progress: BenchProgress, warmingUp: boolean) => void;
  stored: () => void;
}

export type TrialOutcome = { valid: true; alarm?: string } | { valid: false; reason: string };

/**
 * Where a trial goes once measured, along one path: the journal stores it (valid, or invalid with its reason), the
 * log reports it, the drift watch judges it. Its progress goes to the journal while it runs. Nothing else writes.
 */
export class TrialConsumers {
  constructor(
    private readonly context: RunContext,
    /** Trials planned so far (a search's plan grows by a block at a time). */
    private readonly total: () => number,
    private readonly drift: DriftWatch,
    /** A lane's live state (run/lane-status.ts): its trials' progress and each one stored. */
    private readonly watch?: TrialWatch,
  ) {}

  /** "trial 3/20 baseline c=8": how the log, progress, `show`, the report and the UI all name a trial. */
  nameOf(trial: PlannedTrial): string {
    return `${formatTrialNumber(trial.index + 1, this.total())} ${trial.variant} ${trial.workload}`;
  }

  /** Progress of `trial` while it runs (the journal throttles it). */
  progressOf(trial: PlannedTrial): TrialProgress {
    const label = this.nameOf(trial);
    return (progress, warmingUp) => {
      this.context.journal.progress(label, progress, warmingUp, this.context.lane);
      this.watch?.progress(label, progress, warmingUp);
    };
  }

  /** The trial-completed path. A valid trial may raise a drift alarm: its message when the run must stop. */
  completed(measured: MeasuredTrial, fingerprint: Fingerprint): TrialOutcome {
    const { journal, experiment, log } = this.context;
    const { trial, level } = measured;
    const where = this.nameOf(trial);
    if (measured.invalid !== undefined || !level) {
      const reason = measured.invalid ?? 'the load client measured nothing';
      journal.invalidTrial({
        variant: trial.variant,
        serverKey: trial.serverKey,
        workload: trial.workload,
        block: trial.block,
        repetition: trial.repetition,
        attempt: measured.attempt,
        startedAt: measured.startedAt,
        finishedAt: measured.finishedAt,
        completed: level?.completed ?? 0,
        failed: level?.failed ?? 0,
        reason,
        ...(this.context.lane && { lane: this.context.lane.index }),
      });
      log(`${where}: INVALID${level ? ` (${level.completed} ok, ${level.failed} failed)` : ''}: ${reason}`);
      return { valid: false, reason };
    }
    const metrics = {
      ...trialMetricsOf(level, {
        ...(measured.telemetry && { gpuSamples: measured.telemetry.series.gpu }),
        ...(experiment.cost && { cost: experiment.cost }),
      }),
      afterStart: measured.afterStart,
    };
    journal.validTrial(
      {
        variant: trial.variant,
        serverKey: trial.serverKey,
        workload: trial.workload,
        ...(measured.workload.concurrency !== undefined && { concurrency: measured.workload.concurrency }),
        params: measured.variant.params,
        block: trial.block,
        repetition: trial.repetition,
        startedAt: measured.startedAt,
        finishedAt: measured.finishedAt,
        metrics,
        cache: measured.cache,
        ...(this.context.lane && { lane: this.context.lane.index }),
      },
      fingerprint,
      level.samples,
      measured.telemetry,
    );
    this.watch?.stored();
    const value = formatNumber(metricValue(metrics, experiment.metric));
    const resent = metrics.resends ? `, ${metrics.resends} resent` : '';
    // A figure of an open loop whose server fell behind is its backlog's, not its rate's: said where the figure is.
    const behind = level.rate && serverBehindLine(level.rate.servedPerSecond, level.rate.scheduledPerSecond, 'scheduled');
    log(
      `${where}: ${value} ${metricUnit(experiment.metric)} (${metrics.completed} ok, ${metrics.failed} failed${resent})${behind ? `; WARNING: ${behind}` : ''}`,
    );
    const alarm = this.drift(trial, fingerprint, measured.telemetry?.summary);
    return alarm === undefined ? { valid: true } : { valid: true, alarm };
  }
}
