import { z } from 'zod';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';

/** Parse `30s`, `500ms`, `2m`, `1h`, or a bare number of seconds, into milliseconds. */
export function parseDurationMs(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/.exec(text);
  if (!match)
    throw new UserError(
      `invalid duration "${text}": use e.g. 90s, 20m, 1h, 500ms or a number of seconds`,
      'write a duration like 90s, 20m or 1h',
      ExitCode.usage,
    );
  const unitMs = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  const ms = Number(match[1]) * unitMs;
  if (ms <= 0) throw new UserError(`duration "${text}" must be positive`, 'give a duration above zero', ExitCode.usage);
  return ms;
}

/** A duration in a file: "90s", "20m", "1h", "500ms", or a positive number of seconds; parsed to milliseconds. */
export const durationSchema = z
  .union([
    z
      .number()
      .positive()
      .transform((seconds) => seconds * 1000),
    z.string(),
  ])
  .transform((value, ctx) => {
    if (typeof value === 'number') return value;
    try {
      return parseDurationMs(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  })
  .meta({ title: 'duration' });
