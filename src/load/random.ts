import type { LengthDistribution } from './types.js';

/** Seeded uniform [0, 1) generator (mulberry32): the same seed gives the same prompts and arrivals on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal deviate by Box-Muller. */
function standardNormal(random: () => number): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** Draw one integer length (always >= 1) from a distribution. */
export function sampleLength(distribution: LengthDistribution, random: () => number): number {
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
export function interArrivalMs(requestsPerSecond: number, arrival: 'poisson' | 'constant', random: () => number): number {
  const meanMs = 1000 / requestsPerSecond;
  return arrival === 'constant' ? meanMs : -Math.log(1 - random()) * meanMs;
}
