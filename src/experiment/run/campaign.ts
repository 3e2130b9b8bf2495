import { listRaceEvents, type RaceEvent } from '../../store/campaign.js';
import type { Db } from '../../store/db.js';
import { listTrials } from '../../store/queries.js';
import { raceStep } from '../analysis/race.js';
import { loadCostModel, predictPlan } from '../plan/budget.js';
import { formatDuration } from '../plan/schedule.js';
import type { Plan, PlannedTrial, ResolvedExperiment } from '../spec/types.js';
import { storedAccuracies } from './accuracy.js';
import { storedEquivalence } from './equivalence.js';
import type { RunJournal } from './journal.js';
import { searchControl } from './search-control.js';

/**
 * What the runner asks between passes of a campaign: which configs a race has eliminated, and whether the run
 * stops early (race decided, or the next pass would exceed the budget). Decisions are stored as race_events, so
 * a resumed run and finalizeRun see the same ones.
 */
export interface CampaignControl {
  /** Before running trials of `pass`: decide for every finished pass before it. Returns the stop reason, if any. */
  beforePass(pass: number): string | undefined;
  /** The trials still to run: those of eliminated configs are dropped. */
  keep(trials: readonly PlannedTrial[]): PlannedTrial[];
  /** Once the queue is empty: a search's next block (none for a fixed plan, or once the search is done). */
  nextBlock(): PlannedTrial[];
}

export function campaignControl(
  db: Db,
  journal: RunJournal,
  experiment: ResolvedExperiment,
  plan: Plan,
  startedAt: string,
  log: (line: string) => void,
): CampaignControl {
  const runId = journal.runId;
  const events = (): RaceEvent[] => listRaceEvents(db, runId);
  const eliminated = (): Set<string> =>
    new Set(events().flatMap((event) => (event.kind === 'eliminated' && event.variant !== undefined ? [event.variant] : [])));
  let decidedThrough = Math.max(-1, ...events().map((event) => event.afterPass));
  const search = experiment.search && searchControl(db, journal, experiment, plan, startedAt, log);
  return {
    nextBlock: () => search?.next() ?? [],
    beforePass(pass) {
      const stopped = events().find((event) => event.kind === 'stop');
      if (stopped) return stopped.reason;
      if (pass === 0 || pass - 1 <= decidedThrough) return undefined;
      const afterPass = pass - 1;
      decidedThrough = afterPass;
      if (experiment.stopping === 'race') {
        const equivalence = storedEquivalence(db, runId, experiment);
        const scores = storedAccuracies(db, runId, experiment);
        const decision = raceStep(experiment, listTrials(db, runId), eliminated(), afterPass, plan.schedule === 'blocked', equivalence, scores);
        for (const entry of decision.eliminate) {
          journal.raceEvent({ kind: 'eliminated', afterPass, variant: entry.variant, reason: entry.reason });
          log(`race: ${entry.variant} eliminated after block ${afterPass + 1}: ${entry.reason}`);
        }
        if (decision.winner !== undefined)
          return stop(afterPass, `race decided after block ${afterPass + 1}: ${decision.winner} is significantly better than every other config`);
      }
      const over = budgetStop(afterPass);
      return over === undefined ? undefined : stop(afterPass, over);
    },
    keep(trials) {
      const out = eliminated();
      return trials.filter((trial) => !out.has(trial.variant));
    },
  };

  function stop(afterPass: number, reason: string): string {
    journal.raceEvent({ kind: 'stop', afterPass, reason });
    log(reason);
    return reason;
  }

  /** Re-plan against the budget: stop when elapsed time plus the next pass (costed from this run's figures so far) would exceed it. */
  function budgetStop(afterPass: number): string | undefined {
    const budget = experiment.budget;
    if (!budget) return undefined;
    const out = eliminated();
    const next = plan.trials.filter((trial) => trial.block === afterPass + 1 && !out.has(trial.variant));
    if (next.length === 0) return undefined;
    const predicted = predictPlan({ trials: next }, experiment, loadCostModel(db, experiment));
    // This run has recorded its first pass by now; a figure still unknown leaves the budget unjudged, not exceeded.
    if (predicted.wallMs === undefined) return undefined;
    const elapsedMs = Date.now() - Date.parse(startedAt);
    const wallMs = elapsedMs + predicted.wallMs;
    const gpuHours = (wallMs / 3_600_000) * budget.gpusPerServer;
    if (budget.wallTimeMs !== undefined && wallMs > budget.wallTimeMs) {
      return `budget: block ${afterPass + 2} would end at ${formatDuration(wallMs)} of the ${formatDuration(budget.wallTimeMs)} wall-time budget; stopped after block ${afterPass + 1}`;
    }
    if (budget.gpuHours !== undefined && gpuHours > budget.gpuHours) {
      return `budget: block ${afterPass + 2} would use ${gpuHours.toFixed(2)} of ${budget.gpuHours} GPU-hours; stopped after block ${afterPass + 1}`;
    }
    return undefined;
  }
}

/** Planned trials a campaign decided not to run: every one after a stop, and those of eliminated configs. */
export function skippedTrialFilter(db: Db, runId: number): (trial: PlannedTrial) => boolean {
  const events = listRaceEvents(db, runId);
  const stopped = events.some((event) => event.kind === 'stop');
  const out = new Set(events.flatMap((event) => (event.kind === 'eliminated' && event.variant !== undefined ? [event.variant] : [])));
  return (trial) => stopped || out.has(trial.variant);
}
