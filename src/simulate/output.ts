/**
 * What a greedy (temperature 0) request generates: a pure function of the model seed, the prompt and the position,
 * so one prompt gets one answer whatever the batch, the arrival order or the worker, as a deterministic engine's
 * does. `lossy` and `divergenceAfter` make a server whose answers differ from that reference in known ways (the
 * configs a quality check must catch): a share of tokens swapped, or the whole tail after N identical tokens.
 */
import { deriveSeed, mulberry32 } from '../util/random.js';
import { type SimToken, tokenOf, VOCABULARY_SIZE } from './text.js';

export interface OutputShape {
  /** Share of tokens replaced by another one (each position drawn on its own, seeded: the same for every run). */
  lossy: number;
  /** Tokens identical to the reference before the rest of the answer differs (the first differing token is this one). */
  divergenceAfter?: number;
}

/** Streams of the position hash: the reference token, its EOS draw, the lossy draw, the diverged tail. */
const STREAM = { token: 1, eos: 2, lossy: 3, lossyPick: 4, diverged: 5 } as const;

/** FNV-1a of the prompt's text (or JSON for token-id and message prompts). */
export function promptHash(promptKey: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < promptKey.length; i++) hash = Math.imul(hash ^ promptKey.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** A uniform [0, 1) draw of one (prompt, position, stream): independent of every other draw. */
function draw(seed: number, prompt: number, position: number, stream: number): number {
  return mulberry32(deriveSeed(deriveSeed(deriveSeed(seed, prompt), position), stream))();
}

/** A token other than `id`, picked by `u`. */
function otherThan(id: number, u: number): number {
  return (id + 1 + Math.floor(u * (VOCABULARY_SIZE - 1))) % VOCABULARY_SIZE;
}

export interface GreedyOutput {
  /** Token at `position` (0-based) of this server's answer. */
  token(position: number): SimToken;
  /** Whether the reference answer ends after `position` (only asked when EOS is not ignored). */
  eosAfter(position: number, eosProbability: number): boolean;
}

export function greedyOutput(seed: number, promptKey: string, shape: OutputShape): GreedyOutput {
  const prompt = promptHash(promptKey);
  const reference = (position: number): number => Math.floor(draw(seed, prompt, position, STREAM.token) * VOCABULARY_SIZE);
  return {
    token(position) {
      const id = reference(position);
      const { divergenceAfter } = shape;
      if (divergenceAfter !== undefined && position >= divergenceAfter) {
        // The first diverging token always differs; after it, an unrelated continuation (equal by chance only).
        const u = draw(seed, prompt, position, STREAM.diverged);
        return tokenOf(position === divergenceAfter ? otherThan(id, u) : Math.floor(u * VOCABULARY_SIZE));
      }
      if (shape.lossy > 0 && draw(seed, prompt, position, STREAM.lossy) < shape.lossy) {
        return tokenOf(otherThan(id, draw(seed, prompt, position, STREAM.lossyPick)));
      }
      return tokenOf(id);
    },
    eosAfter: (position, eosProbability) => eosProbability > 0 && draw(seed, prompt, position, STREAM.eos) < eosProbability,
  };
}
