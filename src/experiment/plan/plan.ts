import { mulberry32 } from '../../util/random.js';
import type { Plan, PlannedTrial } from '../spec/types.js';

export interface PlanInput {
  variants: ReadonlyArray<{ name: string; serverKey: string }>;
  workloads: readonly string[];
  repetitions: number;
  seed: number;
}

/**
 * Order the trials of an experiment.
 *
 * Trade-off: interleaving variants in randomized blocks protects the comparison from slow drift (thermal state,
 * other tenants, cache warm-up), but with one server at a time every change of server config is a restart, and a
 * restart can cost ~15 minutes of model load. All-A-then-all-B needs only (servers − 1) restarts but confounds the
 * variant with time. The compromise here: blocks = repetitions; each block visits every server config once
 * (random order per block, seeded) and runs all (variant, workload) pairs of that config in random order, so
 * client-side-only variants interleave freely on one server. Each block starts with the config that ended the
 * previous block, so consecutive blocks share a server: restarts = blocks × (servers − 1) instead of one per trial.
 */
export function planExperiment(input: PlanInput): Plan {
  const random = mulberry32(input.seed);
  const groups = groupByServer(input.variants);
  const trials: PlannedTrial[] = [];
  let previousKey: string | undefined;
  for (let block = 0; block < input.repetitions; block += 1) {
    const keys = shuffle([...groups.keys()], random);
    if (previousKey !== undefined) keys.unshift(...keys.splice(keys.indexOf(previousKey), 1));
    for (const serverKey of keys) {
      const pairs = groups.get(serverKey)!.flatMap((variant) => input.workloads.map((workload) => ({ variant, workload })));
      for (const { variant, workload } of shuffle(pairs, random)) {
        trials.push({ index: trials.length, block, repetition: block, variant, serverKey, workload });
      }
      previousKey = serverKey;
    }
  }
  return { seed: input.seed, blocks: input.repetitions, restarts: countRestarts(trials), trials };
}

/** Distinct server keys in the order the plan first needs them. */
export function serverKeysOf(plan: Plan): string[] {
  return [...new Set(plan.trials.map((trial) => trial.serverKey))];
}

/** Server starts beyond the first: every change of serverKey between consecutive trials. */
export function countRestarts(trials: ReadonlyArray<{ serverKey: string }>): number {
  let restarts = 0;
  for (let i = 1; i < trials.length; i += 1) if (trials[i]!.serverKey !== trials[i - 1]!.serverKey) restarts += 1;
  return restarts;
}

function groupByServer(variants: PlanInput['variants']): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const variant of variants) groups.set(variant.serverKey, [...(groups.get(variant.serverKey) ?? []), variant.name]);
  return groups;
}

/** Fisher–Yates with the plan's seeded generator. */
function shuffle<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
