/**
 * The screening designs of `servelab bisect` (pure): two-level factorials in which each factor (one setting, or a
 * group of settings restored together) is restored in half of the configurations. Every trial then informs every
 * factor's effect: a factor's effect is the contrast of the half that restores it with the half that does not, so
 * m configurations of t trials estimate each of up to m − 1 effects as precisely as one-at-a-time testing does with
 * m·t/2 trials per arm. Up to three factors: the full factorial; four: 2^(4−1) with D = ABC; five to eight: 16
 * configurations, 2^(f−(f−4)) with E = ABC, F = BCD, G = ACD, H = ABD (Montgomery, Design and Analysis of
 * Experiments, table of 2^(k−p) designs). Every generator has three letters, so the design is of resolution IV (no
 * effect is confounded with a pair's interaction) and holds both the current configuration (nothing restored) and
 * the reference (everything restored).
 */

/** Most factors one screening design takes; more settings are screened in groups first. */
export const MAX_FACTORS = 8;

const GENERATORS: ReadonlyArray<readonly number[]> = [
  [0, 1, 2],
  [1, 2, 3],
  [0, 2, 3],
  [0, 1, 3],
];

/** Rows of ±1 (−1: left as now, +1: restored), one column per factor; the first row restores nothing, the last all. */
export function screeningRows(factors: number): number[][] {
  if (factors < 1 || factors > MAX_FACTORS) throw new Error(`a screening design takes 1 to ${MAX_FACTORS} factors, not ${factors}`);
  const base = factors <= 3 ? factors : factors === 4 ? 3 : 4;
  const rows: number[][] = [];
  for (let index = 0; index < 2 ** base; index += 1) {
    const row: number[] = Array.from({ length: base }, (_, bit) => ((index >> bit) & 1 ? 1 : -1));
    const extra = factors - base;
    const generators = factors === 4 ? [[0, 1, 2]] : GENERATORS.slice(0, extra);
    for (const word of generators) row.push(word.reduce((product, column) => product * row[column]!, 1));
    rows.push(row);
  }
  return rows;
}

/**
 * Pairs of factors whose interaction columns coincide in these rows (an alias chain of a fractional design: the
 * data cannot tell them apart), each chain with its ±1 column. A full factorial has one pair per chain.
 */
export function aliasChains(rows: readonly (readonly number[])[]): Array<{ pairs: Array<[number, number]>; column: number[] }> {
  const factors = rows[0]?.length ?? 0;
  const chains = new Map<string, { pairs: Array<[number, number]>; column: number[] }>();
  for (let a = 0; a < factors; a += 1) {
    for (let b = a + 1; b < factors; b += 1) {
      const column = rows.map((row) => row[a]! * row[b]!);
      const key = column.join(',');
      const chain = chains.get(key) ?? { pairs: [], column };
      chain.pairs.push([a, b]);
      chains.set(key, chain);
    }
  }
  return [...chains.values()];
}
