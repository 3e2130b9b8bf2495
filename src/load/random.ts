import { type Random, standardGamma, standardNormal } from '../util/random.js';
import type { LengthDistribution, RateSchedule } from './types.js';

/** Draw one integer length (always >= 1) from a distribution. */
export function sampleLength(distribution: LengthDistribution, random: Random): number {
  switch (distribution.kind) {
    case 'fixed':
      return distribution.value;
    case 'uniform':
      return distribution.min + Math.floor(random() * (distribution.max - distribution.min + 1));
    case 'normal': {
      const value = Math.round(distribution.mean + distribution.stddev * standardNormal(random));
      const min = distribution.min ?? 1;
      const max = distribution.max ?? Number.MAX_SAFE_INTEGER;
      return Math.min(max, Math.max(min, value));
    }
  }
}

/**
 * Gap to the next arrival, in ms. Poisson: exponential gaps; constant: exactly 1/rate; gamma: shape = burstiness,
 * scale = 1/(rate·burstiness), so the mean gap stays 1/rate and the gaps' coefficient of variation is
 * 1/sqrt(burstiness) (1 = Poisson, below 1 burstier, above 1 more regular), as vLLM's `bench serve --burstiness`
 * draws them (vllm/benchmarks/serve.py `get_request`, vllm-project/vllm@009e6d4a: `theta = 1.0 /
 * (current_request_rate * burstiness)`, `np.random.gamma(shape=burstiness, scale=theta)`). Unlike vLLM, the drawn
 * schedule is not rescaled to the nominal span: the level reports the schedule's own rate beside the offered one.
 */
export function interArrivalMs(schedule: Pick<RateSchedule, 'requestsPerSecond' | 'arrival' | 'burstiness'>, random: Random): number {
  const meanMs = 1000 / schedule.requestsPerSecond;
  switch (schedule.arrival) {
    case 'constant':
      return meanMs;
    case 'poisson':
      return -Math.log(1 - random()) * meanMs;
    case 'gamma': {
      const shape = schedule.burstiness ?? 1;
      return (standardGamma(shape, random) / shape) * meanMs;
    }
  }
}
