import type { Db } from '../../store/db.js';
import { listTrials } from '../../store/queries.js';
import { listSearchSteps, type StoredSearchStep } from '../../store/search.js';
import type { TrialRecord } from '../../store/types.js';
import { mulberry32 } from '../../util/random.js';
import { slotKey } from '../../util/trial-keys.js';
import { type SearchRun, searchObjective, searchObservations, searchRunOf, searchSettings, searchStanding } from '../analysis/search.js';
import { searchLeaders } from '../analysis/search-summary.js';
import { countRestarts } from '../plan/plan.js';
import { searchStep } from '../search/strategy.js';
import { pointKey, type SearchPoint, type SearchStep } from '../search/types.js';
import { metricUnit } from '../spec/metrics.js';
import type { MetricName, Plan, PlannedTrial, ResolvedExperiment } from '../spec/types.js';
import { leaderText } from '../text/search-format.js';
import type { RunJournal } from './journal.js';

/**
 * The runner side of a search: between blocks, ask the strategy (search/strategy.ts, pure) what to measure next,
 * store its decision with the block's trials appended to the run's plan (one write), and hand the runner the
 * block's trials. A resumed run replays the stored steps: it finishes a block left half-measured before it asks
 * for the next, so the strategy sees the same observations it would have.
 */
export interface SearchControl {
  /** The next trials to run: the rest of a stored block, else a newly decided one; none when the search is done. */
  next(): PlannedTrial[];
}

export function searchControl(
  db: Db,
  journal: RunJournal,
  experiment: ResolvedExperiment,
  plan: Plan,
  startedAt: string,
  log: (line: string) => void,
): SearchControl {
  const run = searchRunOf(experiment)!;
  const objective = searchObjective(experiment);
  const runId = journal.runId;
  return {
    next() {
      const steps = listSearchSteps(db, runId);
      const measured = new Set(listTrials(db, runId).map(slotKey));
      const left = plan.trials.filter((trial) => !measured.has(slotKey(trial)));
      if (left.length > 0) return left;
      const last = steps.at(-1);
      if (last?.done || (last && last.measure.length === 0)) return [];
      const block = last === undefined ? 0 : last.block + 1;
      const trials = listTrials(db, runId);
      // GPU-seconds since the run started, whole: the strategy's budget unit (a resume counts the time in between too).
      const spentSeconds = Math.round(((Date.now() - Date.parse(startedAt)) / 1000) * (run.search.budget?.gpusPerServer ?? 1));
      const dropped = new Map(steps.flatMap((step) => step.drop.map((entry) => [entry.point, entry.reason] as const)));
      const step = searchStep(run.space, searchSettings(experiment, run, trials), {
        observations: searchObservations(run, objective.metric, trials),
        spent: spentSeconds,
        dropped,
      });
      const blockTrials = trialsOfBlock(run, experiment, step.measure, block, plan.trials.length);
      const stored = { ...storedStep(run, step, block, spentSeconds), createdAt: new Date().toISOString() };
      plan.trials.push(...blockTrials);
      plan.blocks = block + 1;
      plan.restarts = countRestarts(plan.trials);
      journal.searchStep(storedStep(run, step, block, spentSeconds), plan);
      log(standingLine(run, [...steps, stored], trials, objective.metric, block));
      if (stored.done) log(`search: ${stored.done.reason}`);
      return blockTrials;
    },
  };
}

/**
 * A block's trials: the requested points in the strategy's order, points sharing a server config next to each other
 * (one start), each point at every workload in a seeded random order, so a level never always runs first, and
 * `trialsPerStart` trials of a workload back to back (repetitions block·k … block·k + k − 1: distinct slots).
 */
function trialsOfBlock(run: SearchRun, experiment: ResolvedExperiment, points: readonly SearchPoint[], block: number, firstIndex: number): PlannedTrial[] {
  const random = mulberry32(experiment.seed * 7919 + block);
  const variants = points.map((point) => experiment.variants.find((variant) => variant.name === run.variantOf.get(pointKey(run.space, point)))!);
  const order: typeof variants = [];
  for (const variant of variants) {
    if (order.includes(variant)) continue;
    order.push(...variants.filter((other) => other.serverKey === variant.serverKey && !order.includes(other)));
  }
  const trials: PlannedTrial[] = [];
  for (const variant of order) {
    const labels = experiment.workloads.map((workload) => workload.label);
    for (let i = labels.length - 1; i > 0; i -= 1) {
      const j = Math.floor(random() * (i + 1));
      [labels[i], labels[j]] = [labels[j]!, labels[i]!];
    }
    const perStart = run.search.trialsPerStart ?? 1;
    for (const workload of labels) {
      for (let trial = 0; trial < perStart; trial += 1) {
        const repetition = block * perStart + trial;
        trials.push({ index: firstIndex + trials.length, block, repetition, variant: variant.name, serverKey: variant.serverKey, workload });
      }
    }
  }
  return trials;
}

function storedStep(run: SearchRun, step: SearchStep, block: number, spentSeconds: number): Omit<StoredSearchStep, 'createdAt'> {
  const done = step.done ?? (step.measure.length === 0 ? { reason: 'the strategy asked for no further point', resolved: false, unresolved: [] } : undefined);
  return {
    block,
    spentSeconds,
    measure: step.measure.map((point) => pointKey(run.space, point)),
    drop: step.drop.map(({ races, ...entry }) => ({ ...entry, ...(races && { races: races.map((race) => ({ ...race })) }) })),
    leaders: step.leaders.map((leader) => ({ ...leader })),
    ...(done && { done: storedDone(done) }),
  };
}

function storedDone({ open, ...done }: NonNullable<SearchStep['done']>): NonNullable<StoredSearchStep['done']> {
  return {
    ...done,
    unresolved: [...done.unresolved],
    ...(open && { open: open.map(({ point, races }) => ({ point, races: races.map((race) => ({ ...race })) })) }),
  };
}

/** "search: before block 4: 20 of 215 points measured, 8 alive, 12 out; 8 to measure next; leaders c=1: … 812 tok/s (+1.9%)". */
function standingLine(run: SearchRun, steps: readonly StoredSearchStep[], trials: readonly TrialRecord[], metric: MetricName, block: number): string {
  const standing = searchStanding(run, steps, trials);
  const leaders = searchLeaders(run, standing.leaders)
    .map((leader) => leaderText(leader, metricUnit(metric)))
    .join('; ');
  const asked = steps.at(-1)!.measure.length;
  return `search: before block ${block + 1}: ${standing.measured} of ${standing.points} points measured, ${standing.alive} alive, ${standing.out} out; ${asked} to measure next${leaders ? `; leaders ${leaders}` : ''}`;
}
