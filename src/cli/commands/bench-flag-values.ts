import { parseDurationMs } from '../../config/duration.js';
import { LIMITS } from '../../load/config.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';

/** Readers of one `servelab bench` flag's text: a wrong value is a usage error naming the flag. */

export function usageError(message: string, hint: string): UserError {
  return new UserError(message, hint, ExitCode.usage);
}

export function positiveInt(flag: string, text: string, max: number = LIMITS.count): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw usageError(`${flag} must be a positive integer, got "${text}"`, `e.g. ${flag} 8`);
  if (value > max) throw usageError(`${flag} must be at most ${max}, got "${text}"`, `e.g. ${flag} 8`);
  return value;
}

export function positiveNumber(flag: string, text: string, example = `${flag} 4`): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw usageError(`${flag} must be a positive number, got "${text}"`, `e.g. ${example}`);
  return value;
}

/** A duration flag (90s, 500ms, seconds) in milliseconds. */
export function durationFlag(flag: string, text: string): number {
  try {
    return parseDurationMs(text);
  } catch (error) {
    throw usageError(`${flag}: ${messageOf(error)}`, `e.g. ${flag} 10s`);
  }
}
