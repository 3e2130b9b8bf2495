/**
 * Holm–Bonferroni step-down adjustment: controls the chance of any false "significantly different" among m
 * tests at alpha, with more power than plain Bonferroni. Adjusted p-values are returned in input order.
 */
export function holmAdjust(pValues: readonly number[]): number[] {
  const m = pValues.length;
  const order = pValues.map((p, index) => ({ p, index })).sort((a, b) => a.p - b.p);
  const adjusted = new Array<number>(m);
  let running = 0;
  order.forEach(({ p, index }, rank) => {
    // Monotone: an adjusted p-value is never below that of a smaller raw p-value.
    running = Math.max(running, Math.min(1, (m - rank) * p));
    adjusted[index] = running;
  });
  return adjusted;
}
