import type { PlannedTrial } from '../spec/types.js';

/** The queue's leading trials on one server config: one server start. */
export function leadingStretch(queue: readonly PlannedTrial[]): PlannedTrial[] {
  const end = queue.findIndex((trial) => trial.serverKey !== queue[0]!.serverKey);
  return queue.slice(0, end < 0 ? queue.length : end);
}

/**
 * Which trials a free lane runs next. A lane claims whole blocks (passes): every config of a block, the baseline
 * included, is measured on the lane that claimed it, so each comparison within a block is made within one lane
 * and configs rotate over lanes block by block. A free lane takes the leading stretch (one server start) of the
 * trials of its own blocks and the unclaimed ones, in plan order, and the block becomes its own. While other lanes
 * are alive a stretch reaches into one more block at most (else one lane would take every block that has the
 * config it runs); a lone lane runs the plan's order, a stretch across blocks included. Pure bookkeeping.
 */
export class LanePool {
  private queue: PlannedTrial[];
  /** block → the lane that claimed it. */
  private readonly owners = new Map<number, number>();
  /** lane → the stretch it is running. */
  private readonly running = new Map<number, readonly PlannedTrial[]>();

  constructor(
    trials: readonly PlannedTrial[],
    /** Lanes alive: one less for each that died. */
    private lanes: number,
    /** Blocks already claimed by live lanes (Slurm lanes, whose claims are in the store): block → lane. */
    claimed: ReadonlyMap<number, number> = new Map(),
  ) {
    this.queue = [...trials].sort((a, b) => a.index - b.index);
    for (const [block, lane] of claimed) this.owners.set(block, lane);
  }

  /** Lowest block with a trial still to run or running: every pass before it is finished. Undefined: none left. */
  openBlock(): number | undefined {
    const blocks = [...this.queue, ...[...this.running.values()].flat()].map((trial) => trial.block);
    return blocks.length === 0 ? undefined : Math.min(...blocks);
  }

  /** Keep only the trials still wanted (a campaign drops eliminated configs). */
  filter(keep: (trials: readonly PlannedTrial[]) => PlannedTrial[]): void {
    this.queue = keep(this.queue);
  }

  /** The next stretch for `lane`, claimed; empty when none is free for it now. */
  take(lane: number): PlannedTrial[] {
    const free = this.queue.filter((trial) => (this.owners.get(trial.block) ?? lane) === lane);
    if (free.length === 0) return [];
    const stretch = this.lanes > 1 ? this.withinBlock(free) : leadingStretch(free);
    for (const trial of stretch) this.owners.set(trial.block, lane);
    const taken = new Set(stretch);
    this.queue = this.queue.filter((trial) => !taken.has(trial));
    this.running.set(lane, stretch);
    return stretch;
  }

  /**
   * The leading stretch of the first free block; when it ends that block, the trials of the same config of the next
   * unclaimed block join it (run first there: a block's order is random anyway), so the lane's next block starts on
   * the server it has instead of a restart.
   */
  private withinBlock(free: readonly PlannedTrial[]): PlannedTrial[] {
    const block = free[0]!.block;
    const ofBlock = free.filter((trial) => trial.block === block);
    const stretch = leadingStretch(ofBlock);
    if (stretch.length < ofBlock.length) return stretch;
    const serverKey = stretch[0]!.serverKey;
    const next = this.queue.find((trial) => trial.block !== block && !this.owners.has(trial.block) && trial.serverKey === serverKey);
    return next ? [...stretch, ...this.queue.filter((trial) => trial.block === next.block && trial.serverKey === serverKey)] : stretch;
  }

  /** A search's next block, once every trial before it is measured. */
  add(trials: readonly PlannedTrial[]): void {
    this.queue = [...this.queue, ...trials].sort((a, b) => a.index - b.index);
  }

  finished(lane: number): void {
    this.running.delete(lane);
  }

  /** A lane that died: its trials not measured go back, and its blocks to the first lane that takes them. */
  release(lane: number, unmeasured: readonly PlannedTrial[]): void {
    this.running.delete(lane);
    this.lanes -= 1;
    this.queue = [...this.queue, ...unmeasured].sort((a, b) => a.index - b.index);
    for (const [block, owner] of this.owners) if (owner === lane) this.owners.delete(block);
  }

  /** A lane is running a stretch, which may end with trials given back. */
  busy(): boolean {
    return this.running.size > 0;
  }
}
