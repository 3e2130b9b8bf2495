import { type Random, standardNormal } from '../util/random.js';
import type { LengthDistribution } from './types.js';

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

/** Gap to the next arrival, in ms, for a Poisson process (exponential gaps) or a constant rate. */
export function interArrivalMs(requestsPerSecond: number, arrival: 'poisson' | 'constant', random: Random): number {
  const meanMs = 1000 / requestsPerSecond;
  return arrival === 'constant' ? meanMs : -Math.log(1 - random()) * meanMs;
}
