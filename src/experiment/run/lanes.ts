import { createExecutor } from '../../exec/create.js';
import type { Executor } from '../../exec/types.js';
import { storeFault } from '../../store/fault.js';
import { listTrials } from '../../store/queries.js';
import { messageOf } from '../../util/errors.js';
import { slotKey } from '../../util/trial-keys.js';
import { LanePool } from '../plan/lane-pool.js';
import { laneServer } from '../spec/lane-server.js';
import type { Plan, PlannedTrial, ResolvedExperiment, ResolvedLane } from '../spec/types.js';
import type { CampaignControl } from './campaign.js';
import { TrialConsumers } from './consumers.js';
import type { RunContext } from './context.js';
import { driftWatch } from './drift-watch.js';
import { LaneBoard, type LanesView } from './lane-status.js';
import { reapLeftoverServers, remoteJobTag } from './leftovers.js';
import { ServerLifecycle } from './server-lifecycle.js';
import { runStretch } from './stretch.js';

/** One lane of a run: its own executor, servers and log prefix; the journal and the store are the run's. */
export interface LaneRun {
  index: number;
  context: RunContext;
  servers: ServerLifecycle;
  consumers: TrialConsumers;
  /** The live state of every lane, when the caller draws it (several lanes only). */
  board?: LaneBoard;
}

/** The experiment as one lane runs it: the lane's env and port range over every variant's server. */
export function laneExperiment(experiment: ResolvedExperiment, lane: ResolvedLane): ResolvedExperiment {
  return {
    ...experiment,
    variants: experiment.variants.map((variant) => ({ ...variant, server: laneServer(variant.server, lane) })),
  };
}

/**
 * The run's lanes: one without `lanes:` (the run's own context, unchanged), else one per lane, each with the
 * lane's executor (created here, closed by `close`) or the run's; with `only`, that lane alone (a Slurm lane's job).
 * `abort` stops every lane's trial in flight.
 */
export async function openLanes(
  context: RunContext,
  plan: Plan,
  abort: AbortSignal,
  live?: { measuredBefore: number; onChange: (view: LanesView) => void },
  only?: number,
): Promise<{ lanes: LaneRun[]; close: () => Promise<void> }> {
  const own: Executor[] = [];
  const specs = context.experiment.lanes;
  const signal = AbortSignal.any([context.signal, abort]);
  const board =
    live && specs && specs.length > 1
      ? new LaneBoard(
          specs.map((lane) => lane.name),
          { before: live.measuredBefore, planned: () => plan.trials.length },
          live.onChange,
        )
      : undefined;
  const laneOf = (index: number, laneContext: RunContext): LaneRun => ({
    index,
    context: laneContext,
    servers: new ServerLifecycle(laneContext),
    consumers: new TrialConsumers(
      laneContext,
      () => plan.trials.length,
      driftWatch(laneContext, plan),
      board && { progress: (trial, progress, warmingUp) => board.progress(index, trial, progress, warmingUp), stored: () => board.stored(index) },
    ),
    ...(board && { board }),
  });
  const close = async () => {
    await Promise.allSettled(own.map((executor) => executor.close()));
  };
  if (specs === undefined) return { lanes: [laneOf(0, { ...context, signal })], close };
  try {
    const lanes: LaneRun[] = [];
    for (const [index, lane] of specs.entries()) {
      if (only !== undefined && index !== only) continue;
      let executor = context.executor;
      if (lane.executor) {
        executor = await createExecutor(lane.executor, { workDir: context.workDir, jobTag: remoteJobTag(context.db, context.runId, index) });
        own.push(executor);
        // The run's reap saw the main executor's host only: this lane's host may hold what a killed runner left.
        await reapLeftoverServers(context.db, context.runId, executor, context.journal, { lane: index, log: context.log });
      }
      const log = (line: string) => context.log(`[${lane.name}] ${line}`);
      lanes.push(laneOf(index, { ...context, experiment: laneExperiment(context.experiment, lane), executor, signal, log, lane: { index, name: lane.name } }));
    }
    return { lanes, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** How running on lanes ended: a drift alarm's message, or undefined (every trial measured, or the campaign stopped). */
export type LanesOutcome = string | undefined;

/**
 * Run the pending trials on every lane at once: a free lane takes the next stretch (LanePool) instead of waiting for
 * a pass to end; the campaign hook decides between stretches for every pass finished. A lane whose stretch fails
 * (its server will not start, a trial stays invalid, its host is gone) leaves the run while another lane is alive:
 * its unmeasured trials go back to the pool for the others, its measured ones stay. With one lane, or on Ctrl-C, a
 * lost lease or a failing store, the failure is the run's, as without lanes.
 */
export async function runOnLanes(
  lanes: readonly LaneRun[],
  pending: readonly PlannedTrial[],
  campaign: CampaignControl | undefined,
  abortAll: AbortController,
  log: (line: string) => void,
): Promise<LanesOutcome> {
  const pool = new LanePool(pending, lanes.length);
  const alive = new Set(lanes.map((lane) => lane.index));
  let ended = false;
  let alarm: string | undefined;
  let wake = () => {};
  let changed = new Promise<void>((resolve) => (wake = resolve));
  const notify = () => {
    const resolve = wake;
    changed = new Promise<void>((next) => (wake = next));
    resolve();
  };

  const laneLoop = async (lane: LaneRun): Promise<void> => {
    while (!ended && alarm === undefined && !abortAll.signal.aborted) {
      const open = pool.openBlock();
      if (open === undefined) {
        // Nothing left or running: a search's plan grows by a block once the last one is measured (run/search-control.ts).
        const next = campaign?.nextBlock() ?? [];
        if (next.length === 0) return;
        pool.add(next);
        continue;
      }
      if (campaign?.beforePass(open) !== undefined) {
        ended = true;
        return notify();
      }
      if (campaign) pool.filter((trials) => campaign.keep(trials));
      const stretch = pool.take(lane.index);
      if (stretch.length === 0) {
        if (!pool.busy()) return;
        lane.board?.set(lane.index, { kind: 'waiting' });
        await changed;
        continue;
      }
      try {
        const config = [...new Set(stretch.map((trial) => trial.variant))].join(', ');
        lane.board?.set(lane.index, { kind: 'starting', config, block: stretch[0]!.block + 1 });
        const stop = await runStretch(lane.context, lane.servers, lane.consumers, stretch);
        pool.finished(lane.index);
        lane.board?.set(lane.index, { kind: 'waiting' });
        if (stop !== undefined) alarm ??= stop;
      } catch (error) {
        if (alive.size === 1 || lane.context.signal.aborted || storeFault(error) !== error) throw error;
        alive.delete(lane.index);
        const measured = new Set(listTrials(lane.context.db, lane.context.runId).map(slotKey));
        const unmeasured = stretch.filter((trial) => !measured.has(slotKey(trial)));
        pool.release(lane.index, unmeasured);
        lane.board?.set(lane.index, { kind: 'left' });
        const name = lane.context.lane?.name ?? `lane${lane.index + 1}`;
        log(`${name} left the run: ${messageOf(error)}; its ${unmeasured.length} unmeasured trials go to the other lanes (${alive.size} left)`);
        return;
      } finally {
        notify();
      }
    }
  };

  let failure: { error: unknown } | undefined;
  await Promise.all(
    lanes.map((lane) =>
      laneLoop(lane).then(
        () => {
          if (lane.board?.view().lanes[lane.index]?.activity.kind !== 'left') lane.board?.set(lane.index, { kind: 'done' });
        },
        (error: unknown) => {
          // The first failure is the run's: the other lanes stop their trials in flight instead of finishing their stretches.
          failure ??= { error };
          abortAll.abort(error);
          notify();
        },
      ),
    ),
  );
  if (failure) throw failure.error;
  return alarm;
}
