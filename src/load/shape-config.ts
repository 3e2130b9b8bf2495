import { z } from 'zod';
import { acceptsFormsOf } from '../config/issues.js';
import {
  DEFAULT_INPUT_TOKENS,
  DEFAULT_PREFIX_TOKENS,
  DEFAULT_QUESTION_TOKENS,
  DEFAULT_QUESTIONS_PER_PREFIX,
  DEFAULT_SYNTHETIC_OUTPUT_TOKENS,
  DEFAULT_THINK_TIME,
} from '../util/defaults.js';
import { messageOf } from '../util/errors.js';
import { parseThinkTime } from './sessions.js';
import type { ThinkTime } from './types.js';

/**
 * zod schemas of the shaped prompt sources (multi-turn sessions, shared prefixes); load/config.ts lists them in
 * `promptSourceSchema`. Kept apart so that file stays one page of the plain sources.
 */

const MAX_TOKENS = 10_000_000;
const count = (what: string) => z.number().int().positive().max(100_000, `expected at most 100000 ${what}`);
const tokens = z.number().int().positive().max(MAX_TOKENS, `expected at most ${MAX_TOKENS} tokens`);

/** `2s`, `500ms`, `exponential:2s`, a number of seconds, or the parsed object (bench's flags pass that through). */
const thinkTimeSchema = acceptsFormsOf(
  z.unknown().transform((value, ctx): ThinkTime => {
    const fail = (message: string): never => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    if (typeof value === 'number') return value >= 0 && Number.isFinite(value) ? { kind: 'fixed', ms: value * 1000 } : fail('expected seconds ≥ 0');
    if (typeof value === 'string') {
      try {
        return parseThinkTime(value);
      } catch (error) {
        return fail(messageOf(error));
      }
    }
    const object = (value ?? {}) as Record<string, unknown>;
    if (object.kind === 'fixed' && typeof object.ms === 'number' && object.ms >= 0) return { kind: 'fixed', ms: object.ms };
    if (object.kind === 'exponential' && typeof object.meanMs === 'number' && object.meanMs >= 0) return { kind: 'exponential', meanMs: object.meanMs };
    return fail('expected a duration (2s, 500ms, 0) or exponential:MEAN (exponential:2s)');
  }),
  z.union([z.string(), z.number().nonnegative()]),
);

export function sessionsSchema(tokenLength: (tokens: number, description: string) => z.ZodType, seed: z.ZodType) {
  return z
    .object({
      kind: z
        .literal('sessions')
        .describe("Multi-turn conversations: every turn after the first carries the server's own earlier answers; concurrency is sessions in flight."),
      turns: count('turns').describe("Turns per session (with `path`: at most this many of each conversation's human turns)."),
      inputTokens: tokenLength(DEFAULT_INPUT_TOKENS, 'Length of each generated human turn (unused with `path`).'),
      outputTokens: tokenLength(DEFAULT_SYNTHETIC_OUTPUT_TOKENS, 'Output length asked for on every turn (max_tokens).'),
      thinkTime: thinkTimeSchema.prefault(DEFAULT_THINK_TIME).meta({
        description: 'Wait before each next turn: fixed (`2s`, a number: seconds) or exponential of that mean (`exponential:2s`).',
        examples: ['exponential:2s'],
      }),
      path: z
        .string()
        .min(1)
        .optional()
        .meta({ description: 'A ShareGPT file whose human turns the sessions send (relative to the experiment file); default: generated turns.' }),
      seed: seed.describe("Seed of the turns, their lengths and think times, and of the file's conversation order."),
    })
    .strict();
}

export function sharedPrefixSchema(tokenLength: (tokens: number, description: string) => z.ZodType, seed: z.ZodType) {
  return z
    .object({
      kind: z
        .literal('shared-prefix')
        .describe('Documents shared by several questions, sent round-robin: a prefix cache hits each document after its first use.'),
      prefixes: count('prefixes').describe('Distinct shared prefixes (documents, system prompts) of each set.'),
      prefixTokens: tokens.default(DEFAULT_PREFIX_TOKENS).describe('Length of each shared prefix in tokens.'),
      questionsPerPrefix: count('questions').default(DEFAULT_QUESTIONS_PER_PREFIX).describe('Requests sharing each prefix.'),
      questionTokens: tokens.default(DEFAULT_QUESTION_TOKENS).describe('Length of the question after the prefix, in tokens.'),
      outputTokens: tokenLength(DEFAULT_SYNTHETIC_OUTPUT_TOKENS, 'Output length asked for (max_tokens).'),
      seed: seed.describe('Seed of the prefixes, questions and lengths.'),
    })
    .strict();
}
