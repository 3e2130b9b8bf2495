/**
 * The keys that identify trials across the plan, the store and the views. JSON arrays, so no variant or workload
 * name can make two different pairs (or slots) share a key, whatever characters the names hold.
 */

/** A variant × workload pair: drift, costs, health, work notes and categories are judged per pair. */
export type PairKey = string & { readonly __brand: 'PairKey' };

/** A planned trial's slot, matching the store's UNIQUE (run, variant, workload, block, repetition). */
export type SlotKey = string & { readonly __brand: 'SlotKey' };

export interface Pair {
  variant: string;
  workload: string;
}

/** What identifies a planned trial among a run's stored trials (a re-run after an invalid one keeps it). */
export interface TrialSlot extends Pair {
  block: number;
  repetition: number;
}

export function pairKey(pair: Pair): PairKey {
  return JSON.stringify([pair.variant, pair.workload]) as PairKey;
}

export function slotKey(slot: TrialSlot): SlotKey {
  return JSON.stringify([slot.variant, slot.workload, slot.block, slot.repetition]) as SlotKey;
}
