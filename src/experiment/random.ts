/**
 * mulberry32: a tiny seeded PRNG, uniform in [0, 1). Statistics must be reproducible: the same trials and seed
 * always give the same confidence interval and p-value, so a re-rendered report never contradicts the stored one.
 */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
