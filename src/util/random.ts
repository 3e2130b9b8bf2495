/** A seeded source of uniform numbers in [0, 1). */
export type Random = () => number;

/**
 * mulberry32: a tiny seeded PRNG, uniform in [0, 1). Everything random in servelab is seeded so it reproduces on
 * every machine: prompts and arrivals, trial order, bootstrap statistics (a re-rendered report never contradicts
 * the stored one) and simulator noise.
 */
export function mulberry32(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Standard normal deviate by Box-Muller (draws two uniforms). */
export function standardNormal(random: Random): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** Seed of an independent stream for one of many parallel consumers (e.g. request n), derived from a base seed. */
export function deriveSeed(seed: number, stream: number): number {
  let h = (seed ^ Math.imul(stream + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
