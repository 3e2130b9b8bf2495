/**
 * The search's first block: points spread over the valid points (constraints already applied) so the response
 * model sees every corner before it guesses. Greedy maximin (farthest-point) selection from several seeded
 * starts, keeping the design whose closest pair is farthest apart; ties in distance go to the point whose knob
 * values the design has used least, the Latin-hypercube property a discrete, constrained space allows.
 */
import type { Random } from '../../util/random.js';
import { squaredDistance } from './encode.js';

const STARTS = 8;

export function maximinDesign(vectors: readonly number[][], size: number, rng: Random, valueKeys: readonly string[][]): number[] {
  const count = Math.min(size, vectors.length);
  let best: { indices: number[]; spread: number } | undefined;
  for (let start = 0; start < STARTS; start += 1) {
    const indices = greedyFrom(Math.floor(rng() * vectors.length), vectors, count, valueKeys);
    const spread = closestPair(indices, vectors);
    if (!best || spread > best.spread + 1e-12) best = { indices, spread };
  }
  return best?.indices ?? [];
}

function greedyFrom(first: number, vectors: readonly number[][], count: number, valueKeys: readonly string[][]): number[] {
  const chosen = [first];
  const used = new Map<string, number>();
  const use = (index: number): void => {
    for (const key of valueKeys[index]!) used.set(key, (used.get(key) ?? 0) + 1);
  };
  use(first);
  const nearest = vectors.map((vector) => squaredDistance(vector, vectors[first]!));
  while (chosen.length < count) {
    let pick = -1;
    let pickReuse = Infinity;
    for (let index = 0; index < vectors.length; index += 1) {
      if (nearest[index]! <= 1e-12) continue;
      const reuse = valueKeys[index]!.reduce((sum, key) => sum + (used.get(key) ?? 0), 0);
      const farther = pick < 0 || nearest[index]! > nearest[pick]! + 1e-9;
      const asFar = pick >= 0 && Math.abs(nearest[index]! - nearest[pick]!) <= 1e-9;
      if (farther || (asFar && reuse < pickReuse)) {
        pick = index;
        pickReuse = reuse;
      }
    }
    if (pick < 0) break;
    chosen.push(pick);
    use(pick);
    for (let index = 0; index < vectors.length; index += 1) nearest[index] = Math.min(nearest[index]!, squaredDistance(vectors[index]!, vectors[pick]!));
  }
  return chosen;
}

function closestPair(indices: readonly number[], vectors: readonly number[][]): number {
  let closest = Infinity;
  for (let i = 0; i < indices.length; i += 1) {
    for (let j = i + 1; j < indices.length; j += 1) closest = Math.min(closest, squaredDistance(vectors[indices[i]!]!, vectors[indices[j]!]!));
  }
  return closest;
}
