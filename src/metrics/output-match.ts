/**
 * How far two sets of answers to the same prompts agree: the comparison behind `servelab compare-outputs` and an
 * experiment's quality.equivalence check. Pure: the callers read files or the store.
 *
 * Answers are compared token by token: by token ids where both sides returned them, else by whitespace-separated
 * words of the text (a stand-in for tokens; `unit` says which was used).
 */
import type { RequestOutput } from './types.js';

export type OutputUnit = 'token ids' | 'words';

export interface DivergentPair {
  prompt: number;
  /** First unequal position in `unit`s (the shorter answer's length when one is a prefix of the other). */
  position: number;
  a: string;
  b: string;
}

export interface OutputMatch {
  /** Prompts answered on both sides (a failed request on either side is left out, and counted in `failed`). */
  prompts: number;
  identical: number;
  /** identical / prompts; undefined when no prompt was answered on both sides. */
  identicalShare?: number;
  /** Equal positions over all compared positions (each pair up to the shorter answer's length); undefined without any. */
  tokenAgreement?: number;
  /** First divergence of the differing answers, in `unit`s; undefined when none differ. */
  firstDivergence?: { median: number; min: number };
  /** The differing pair that diverges earliest (ties: lower prompt), to show side by side. */
  earliest?: DivergentPair;
  unit: OutputUnit;
  /** Prompts on one side only. */
  unmatched: number;
  /** Prompts whose request failed on either side. */
  failed: number;
}

function units(output: RequestOutput, byIds: boolean): ReadonlyArray<string | number> {
  if (byIds) return output.tokenIds ?? [];
  const trimmed = output.text.trim();
  return trimmed === '' ? [] : trimmed.split(/\s+/);
}

function median(sorted: readonly number[]): number {
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** Compare answers keyed by prompt index (one answer per prompt and side; a repeated prompt keeps its first). */
export function compareOutputs(a: readonly RequestOutput[], b: readonly RequestOutput[]): OutputMatch {
  const byPrompt = (outputs: readonly RequestOutput[]) => {
    const map = new Map<number, RequestOutput>();
    for (const output of outputs) if (!map.has(output.prompt)) map.set(output.prompt, output);
    return map;
  };
  const left = byPrompt(a);
  const right = byPrompt(b);
  const pairs: Array<[RequestOutput, RequestOutput]> = [];
  let unmatched = 0;
  let failed = 0;
  for (const [prompt, output] of left) {
    const other = right.get(prompt);
    if (!other) unmatched++;
    else if (output.error !== undefined || other.error !== undefined) failed++;
    else pairs.push([output, other]);
  }
  for (const prompt of right.keys()) if (!left.has(prompt)) unmatched++;
  const byIds = pairs.length > 0 && pairs.every(([x, y]) => x.tokenIds !== undefined && y.tokenIds !== undefined);

  let identical = 0;
  let equalPositions = 0;
  let positions = 0;
  const divergences: number[] = [];
  let earliest: DivergentPair | undefined;
  for (const [x, y] of pairs.sort(([p], [q]) => p.prompt - q.prompt)) {
    const ux = units(x, byIds);
    const uy = units(y, byIds);
    const shorter = Math.min(ux.length, uy.length);
    let first = -1;
    for (let i = 0; i < shorter; i++) {
      if (ux[i] === uy[i]) equalPositions++;
      else if (first === -1) first = i;
    }
    positions += shorter;
    const same = x.text === y.text && ux.length === uy.length && first === -1;
    if (same) {
      identical++;
      continue;
    }
    // Equal up to the shorter length but not identical: they part where the shorter one ends (or in text alone).
    const position = first === -1 ? shorter : first;
    divergences.push(position);
    if (!earliest || position < earliest.position) earliest = { prompt: x.prompt, position, a: x.text, b: y.text };
  }
  divergences.sort((p, q) => p - q);
  return {
    prompts: pairs.length,
    identical,
    ...(pairs.length > 0 && { identicalShare: identical / pairs.length }),
    ...(positions > 0 && { tokenAgreement: equalPositions / positions }),
    ...(divergences.length > 0 && { firstDivergence: { median: median(divergences), min: divergences[0]! } }),
    ...(earliest && { earliest }),
    unit: byIds ? 'token ids' : 'words',
    unmatched,
    failed,
  };
}
