import { setTimeout as delay } from 'node:timers/promises';
import { claimBlocks, laneClaims } from '../../store/lane-claims.js';
import { leaseStaleMs, liveLeaseScopes, revokeLease } from '../../store/lease.js';
import { getRun, listTrials } from '../../store/queries.js';
import { slotKey } from '../../util/trial-keys.js';
import { LanePool } from '../plan/lane-pool.js';
import type { Plan, PlannedTrial } from '../spec/types.js';
import type { LaneRun, LanesOutcome } from './lanes.js';
import { runStretch } from './stretch.js';

/** The lease scope of Slurm lane `index`: the runner of that lane's job holds it for the job's lifetime. */
export function slurmLaneScope(index: number): string {
  return `lane:${index}`;
}

function laneOfScope(scope: string): number | undefined {
  const match = /^lane:(\d+)$/.exec(scope);
  return match ? Number(match[1]) : undefined;
}

type Claim = { stretch: PlannedTrial[] } | { othersHold: number } | { done: true } | { stop: string };

/**
 * The next stretch for this lane, claimed in the store in one transaction fenced by the lane's lease: the LanePool
 * rules (whole blocks per lane), with the blocks other live lanes claimed as theirs. A block claimed by a lane whose
 * lease is gone (its job ended, was cancelled, or went silent) is free again; that lane's lease is revoked first, so
 * a job that was only paused can store nothing of a block another lane now measures.
 */
function claimNext(lane: LaneRun, plan: Plan): Claim {
  const { db, runId, journal } = lane.context;
  return journal.fence((): Claim => {
    const run = getRun(db, runId);
    if (run?.status === 'drift') return { stop: run.message ?? 'drift alarm on another lane' };
    const measured = new Set(listTrials(db, runId).map(slotKey));
    const queue = plan.trials.filter((trial) => !measured.has(slotKey(trial)));
    if (queue.length === 0) return { done: true };
    const live = new Set([...liveLeaseScopes(db, runId)].map(laneOfScope).filter((index) => index !== undefined));
    live.add(lane.index);
    const owners = new Map<number, number>();
    for (const [block, owner] of laneClaims(db, runId)) {
      if (live.has(owner)) owners.set(block, owner);
      else revokeLease(db, runId, slurmLaneScope(owner));
    }
    const stretch = new LanePool(queue, live.size, owners).take(lane.index);
    if (stretch.length === 0) return { othersHold: queue.length };
    claimBlocks(
      db,
      runId,
      lane.index,
      stretch.map((trial) => trial.block),
    );
    return { stretch };
  });
}

/**
 * One Slurm lane: this job's runner, on its node, takes whole blocks of the run's plan from the store until every
 * trial is measured, each stretch's server started here, inside the job's allocation. Once the blocks left are other
 * lanes', it waits: a lane whose job ends early (time limit, scancel, node failure) leaves its unmeasured trials to
 * the lanes still running. Returns a drift alarm's message (this lane's or another's), or undefined when every
 * trial is in.
 */
export async function runSlurmLane(lane: LaneRun, plan: Plan): Promise<LanesOutcome> {
  const { signal, log } = lane.context;
  const pollMs = Math.min(2_000, leaseStaleMs() / 6);
  let waiting = false;
  for (;;) {
    signal.throwIfAborted();
    const claim = claimNext(lane, plan);
    if ('done' in claim) return undefined;
    if ('stop' in claim) return claim.stop;
    if ('othersHold' in claim) {
      if (!waiting) log(`${claim.othersHold} trials left, on blocks other lanes are running: waiting in case one of them ends early`);
      waiting = true;
      await delay(pollMs, undefined, { signal }).catch(() => undefined);
      continue;
    }
    waiting = false;
    const stop = await runStretch(lane.context, lane.servers, lane.consumers, claim.stretch);
    if (stop !== undefined) return stop;
  }
}
