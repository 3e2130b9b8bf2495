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
