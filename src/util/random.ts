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

/**
 * Gamma(shape, 1) deviate by Marsaglia and Tsang (2000); a shape below 1 is boosted by one and scaled back by
 * U^(1/shape), their standard trick. Mean = shape, variance = shape.
 */
export function standardGamma(shape: number, random: Random): number {
  if (shape < 1) return standardGamma(shape + 1, random) * (1 - random()) ** (1 / shape);
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = standardNormal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    if (Math.log(1 - random()) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v;
  }
}

/** Seed of an independent stream for one of many parallel consumers (e.g. request n), derived from a base seed. */
export function deriveSeed(seed: number, stream: number): number {
  let h = (seed ^ Math.imul(stream + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
