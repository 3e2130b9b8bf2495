/**
 * The one trial numbering every view uses (the runner's log, `show`, the report, the UI): the trial's 1-based
 * position in the plan's run order, out of the planned total. Store row ids and 0-based blocks are never shown.
 */
import { slotKey, type TrialSlot } from '../../util/trial-keys.js';
import type { Plan } from './types.js';

export type { TrialSlot };

/** 1-based run-order position of each slot in the plan; a slot the plan lacks gets none. */
export function trialNumbers(plan: Pick<Plan, 'trials'>): (slot: TrialSlot) => number | undefined {
  const positions = new Map(plan.trials.map((trial) => [slotKey(trial), trial.index + 1]));
  return (slot) => positions.get(slotKey(slot));
}

/**
 * A stored row's plan position as the JSON views print it: block, repetition (and attempt, trial index) counted from
 * 1 like every other view; the store keeps them 0-based.
 */
export function numberedFromOne<Row extends { block: number; repetition?: number; attempt?: number; index?: number }>(row: Row): Row {
  return {
    ...row,
    block: row.block + 1,
    ...(row.repetition !== undefined && { repetition: row.repetition + 1 }),
    ...(row.attempt !== undefined && { attempt: row.attempt + 1 }),
    ...(row.index !== undefined && { index: row.index + 1 }),
  };
}
