/**
 * What a greedy (temperature 0) request generates: a pure function of the model seed, the prompt and the position,
 * so one prompt gets one answer whatever the arrival order or the worker, as a deterministic engine's does.
 * `lossy` and `divergenceAfter` make a server whose answers differ from that reference in known ways (the
 * configs a quality check must catch): a share of tokens swapped, or the whole tail after N identical tokens.
 * `batchVariance` makes the answer depend on batching, as GPU kernels do (a batch of another size reduces in
 * another order and flips a near-tied token): an answer that shared the batch with other requests departs, with
 * that probability per prompt, from the unbatched one at a position in its second half, and continues unrelated;
 * drawn per seed and prompt, so every batched answer of one prompt departs alike (it does not depend on which
 * requests shared the batch), which is what makes it an A/A floor a test can predict.
 * With an answer key (--answer-key), a prompt the key holds is answered with its answer's words, then EOS; `lossy`
 * then makes that share of prompts (drawn per prompt, seeded) answer wrong instead, as a degraded model would; batching
 * leaves such an answer alone.
 */
import { deriveSeed, mulberry32 } from '../util/random.js';
import { type AnswerKey, answerOf } from './answer-key.js';
import { type SimToken, tokenOf, VOCABULARY_SIZE } from './text.js';

export interface OutputShape {
  /** Share of tokens replaced by another one (each position drawn on its own, seeded: the same for every run). */
  lossy: number;
  /** Tokens identical to the reference before the rest of the answer differs (the first differing token is this one). */
  divergenceAfter?: number;
  /** Probability per prompt that an answer generated in a shared batch departs from the unbatched one (--batch-variance). */
  batchVariance: number;
}

/** Streams of the position hash: the reference token, its EOS draw, the lossy draw, the diverged tail, the batched departure. */
const STREAM = { token: 1, eos: 2, lossy: 3, lossyPick: 4, diverged: 5, wrongAnswer: 6, wrongPick: 7, batched: 8, batchedAt: 9, batchedTail: 10 } as const;

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
  /** Token at `position` (0-based) of this server's answer; `batched`: the request has shared the batch with others. */
  token(position: number, batched: boolean): SimToken;
  /** Whether the reference answer ends after `position` (only asked when EOS is not ignored). */
  eosAfter(position: number, eosProbability: number): boolean;
}

/**
 * Another answer than `answer`, picked by `u`: a number off by 1 to 9, another letter of A–D, else the answer negated
 * (so every scorer finds it wrong).
 */
export function wrongAnswer(answer: string, u: number): string {
  const trimmed = answer.trim();
  if (/^-?\d+(?:\.\d+)?$/.test(trimmed.replaceAll(',', ''))) return String(Number(trimmed.replaceAll(',', '')) + 1 + Math.floor(u * 9));
  if (/^[A-D]$/i.test(trimmed)) return 'ABCD'[('ABCD'.indexOf(trimmed.toUpperCase()) + 1 + Math.floor(u * 3)) % 4]!;
  return `not ${trimmed}`;
}

/** Ids of the answer's words, past the vocabulary (they are not among its words). */
function answerTokens(text: string): SimToken[] {
  return text
    .split(/\s+/)
    .filter((word) => word !== '')
    .map((word) => ({ id: VOCABULARY_SIZE + (promptHash(word) % 100_000), text: ` ${word}` }));
}

/** Where the answer departs from the reference: a first token other than it, then an unrelated continuation. */
interface Departure {
  at: number;
  stream: number;
}

/**
 * `length`: the tokens asked for (the answer's length when EOS is ignored), whose second half a batched answer
 * departs in; an answer of one token has none.
 */
export function greedyOutput(seed: number, promptKey: string, shape: OutputShape, length: number, answers?: AnswerKey): GreedyOutput {
  const prompt = promptHash(promptKey);
  const reference = (position: number): number => Math.floor(draw(seed, prompt, position, STREAM.token) * VOCABULARY_SIZE);
  const known = answers && answerOf(answers, promptKey);
  if (known !== undefined) {
    const wrong = shape.lossy > 0 && draw(seed, prompt, 0, STREAM.wrongAnswer) < shape.lossy;
    const said = answerTokens(wrong ? wrongAnswer(known, draw(seed, prompt, 0, STREAM.wrongPick)) : known);
    return {
      // After the answer (only with EOS ignored), the reference continuation: its words hold no number or capital.
      token: (position) => said[position] ?? tokenOf(reference(position)),
      eosAfter: (position) => position >= said.length - 1,
    };
  }
  const unbatched: Departure | undefined = shape.divergenceAfter === undefined ? undefined : { at: shape.divergenceAfter, stream: STREAM.diverged };
  const half = Math.ceil(length / 2);
  const batchedAt = half + Math.floor(draw(seed, prompt, 0, STREAM.batchedAt) * (length - half));
  const departsBatched = shape.batchVariance > 0 && batchedAt < length && draw(seed, prompt, 0, STREAM.batched) < shape.batchVariance;
  // Batched, the earlier of the two departures: the config's own divergence happens in any batch.
  const batched: Departure | undefined =
    departsBatched && (unbatched === undefined || batchedAt < unbatched.at) ? { at: batchedAt, stream: STREAM.batchedTail } : unbatched;
  return {
    token(position, shared) {
      const id = reference(position);
      const departure = shared ? batched : unbatched;
      if (departure !== undefined && position >= departure.at) {
        // The first departing token always differs; after it, an unrelated continuation (equal by chance only).
        const u = draw(seed, prompt, position, departure.stream);
        return tokenOf(position === departure.at ? otherThan(id, u) : Math.floor(u * VOCABULARY_SIZE));
      }
      if (shape.lossy > 0 && draw(seed, prompt, position, STREAM.lossy) < shape.lossy) {
        return tokenOf(otherThan(id, draw(seed, prompt, position, STREAM.lossyPick)));
      }
      return tokenOf(id);
    },
    eosAfter: (position, eosProbability) => eosProbability > 0 && draw(seed, prompt, position, STREAM.eos) < eosProbability,
  };
}
