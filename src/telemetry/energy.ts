import type { GpuSample } from './types.js';

/**
 * Mean electrical power of the sampled GPUs over a window, summed over the GPUs (each GPU's mean is the trapezoid
 * integral of its power.draw readings over their span, divided by that span): the server's draw, from which a trial
 * derives joules per token. Uses the readings inside [fromMs, toMs]; a GPU with none there falls back to all of its
 * readings (a window shorter than the sampling interval). Undefined when no GPU reported power.
 */
export function meanPowerW(samples: readonly GpuSample[], fromMs: number, toMs: number): { watts: number; gpus: number } | undefined {
  const byGpu = new Map<number, GpuSample[]>();
  for (const sample of samples) {
    if (sample.powerW === undefined || !Number.isFinite(sample.powerW)) continue;
    byGpu.set(sample.index, [...(byGpu.get(sample.index) ?? []), sample]);
  }
  let watts = 0;
  for (const readings of byGpu.values()) {
    const inside = readings.filter((sample) => sample.at >= fromMs && sample.at <= toMs);
    watts += timeWeightedMean((inside.length > 0 ? inside : readings).sort((a, b) => a.at - b.at));
  }
  return byGpu.size === 0 ? undefined : { watts, gpus: byGpu.size };
}

function timeWeightedMean(sorted: readonly GpuSample[]): number {
  const span = sorted.at(-1)!.at - sorted[0]!.at;
  if (span <= 0) return sorted.reduce((sum, sample) => sum + sample.powerW!, 0) / sorted.length;
  let joules = 0;
  for (let i = 1; i < sorted.length; i++) joules += ((sorted[i]!.powerW! + sorted[i - 1]!.powerW!) / 2) * (sorted[i]!.at - sorted[i - 1]!.at);
  return joules / span;
}
