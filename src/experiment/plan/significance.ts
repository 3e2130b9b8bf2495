/**
 * Can the trials asked for reach significance at all? The exact rank-sum tests behind every verdict have a floor:
 * the p of complete separation (2 / C(2n, n) for n vs n pooled; the product over passes when stratified), and the
 * best-config matrix multiplies the smallest p by its number of pairs (Holm's first step). Below that floor no data
 * can be significant, so `plan` says so before any GPU time is spent, with the trials per config that would do. Pure.
 */
import { formatPValue } from '../../util/format.js';
import { type BlockedValue, rankSumTest, stratifiedRankSumTest } from '../analysis/stats.js';
import type { ResolvedExperiment } from '../spec/types.js';
import { blockedPassSizes } from './schedule.js';

/** The most trials per config the suggestion looks at. */
const MAX_SUGGESTED_TRIALS = 50;

/** The smallest p of n vs n trials, all of one side above the other: per pass when `blocked`, pooled otherwise. */
export function floorPValue(experiment: ResolvedExperiment, trials: number, blocked: boolean): number {
  if (!blocked) {
    const low = Array.from({ length: trials }, (_, index) => index);
    return rankSumTest(
      low,
      low.map((value) => value + trials),
      { seed: experiment.seed },
    ).pValue;
  }
  const baseline: BlockedValue[] = [];
  const candidate: BlockedValue[] = [];
  blockedPassSizes({ ...experiment, trials }).forEach((size, block) => {
    for (let index = 0; index < size; index += 1) {
      baseline.push({ value: index, block });
      candidate.push({ value: size + index, block });
    }
  });
  return stratifiedRankSumTest(baseline, candidate, { seed: experiment.seed }).pValue;
}

/**
 * Why the planned trials cannot give a significant verdict (vs the baseline: the raw p; the best config: after Holm
 * over every pair of configs), with the trials per config that could; undefined when they can.
 */
export function significanceWarning(experiment: ResolvedExperiment, blocked: boolean): string | undefined {
  const { alpha } = experiment.verdict;
  const configs = experiment.variants.length;
  if (configs < 2) return undefined;
  const pairs = (configs * (configs - 1)) / 2;
  const reaches = (trials: number, times: number): boolean => floorPValue(experiment, trials, blocked) * times < alpha;
  const needed = (times: number): string => {
    let trials = experiment.trials + 1;
    while (trials <= MAX_SUGGESTED_TRIALS && !reaches(trials, times)) trials += 1;
    return trials > MAX_SUGGESTED_TRIALS ? `more than ${MAX_SUGGESTED_TRIALS} trials per config would be needed` : `trials: ${trials} would`;
  };
  const floor = floorPValue(experiment, experiment.trials, blocked);
  const layout = blocked ? 'stratified by pass' : 'pooled';
  if (floor >= alpha) {
    return `with trials: ${experiment.trials} no verdict can be significant: the exact rank-sum test (${layout}) gives at least p ${formatPValue(floor)} ≥ α ${alpha} even when every trial of one config beats every trial of the other; ${needed(1)}`;
  }
  if (configs > 2 && floor * pairs >= alpha) {
    return `with trials: ${experiment.trials} and ${configs} configs the best config cannot be significantly better than another: Holm's correction over ${pairs} pairs makes the smallest possible p ${formatPValue(floor)} × ${pairs} = ${formatPValue(floor * pairs)} ≥ α ${alpha} (the verdicts vs the baseline can still be); ${needed(pairs)}`;
  }
  return undefined;
}
