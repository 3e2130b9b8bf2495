import { LIMITS } from '../../load/config.js';
import type { ArrivalProcess, Workload } from '../../load/types.js';
import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';

/** `servelab bench`'s workload flags, as commander hands them over, and the number parsers its other flags share. */
export interface WorkloadFlags {
  singleStream?: string;
  concurrency?: string;
  requests?: string;
  rate?: string;
  arrival?: ArrivalProcess;
  burstiness?: string;
  maxInFlight: string;
}

/** Requests of the default workload (`--single-stream` without a count). */
export const DEFAULT_SINGLE_STREAM_REQUESTS = 8;

export function usageError(message: string, hint: string): UserError {
  return new UserError(message, hint, ExitCode.usage);
}

export function positiveInt(flag: string, text: string, max: number = LIMITS.count): number {
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw usageError(`${flag} must be a positive integer, got "${text}"`, `e.g. ${flag} 8`);
  if (value > max) throw usageError(`${flag} must be at most ${max}, got "${text}"`, `e.g. ${flag} 8`);
  return value;
}

export function positiveNumber(flag: string, text: string): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0) throw usageError(`${flag} must be a positive number, got "${text}"`, `e.g. ${flag} 4`);
  return value;
}

/** Workload from the mutually exclusive --single-stream / --concurrency / --rate flags. */
export function workloadFromFlags(flags: WorkloadFlags): Workload {
  const chosen = [flags.singleStream, flags.concurrency, flags.rate].filter((value) => value !== undefined).length;
  if (chosen > 1) throw usageError('--single-stream, --concurrency and --rate are alternatives', 'pick one workload per run');
  if ((flags.arrival !== undefined || flags.burstiness !== undefined) && flags.rate === undefined) {
    throw usageError('--arrival and --burstiness shape the arrivals of --rate', 'add --rate R, or leave them out');
  }
  if (flags.rate !== undefined) {
    // Its bounds are the file's (load/config.ts), checked when the workload goes through the schema.
    const requestsPerSecond = positiveNumber('--rate', flags.rate);
    const requests = flags.requests ? positiveInt('--requests', flags.requests) : Math.max(32, Math.ceil(requestsPerSecond * 10));
    // --burstiness alone means gamma arrivals, as in vLLM's bench serve; a wrong pairing is the schema's to word.
    const burstiness = flags.burstiness !== undefined ? positiveNumber('--burstiness', flags.burstiness) : undefined;
    const arrival = flags.arrival ?? (burstiness !== undefined ? 'gamma' : 'poisson');
    const maxInFlight = positiveInt('--max-in-flight', flags.maxInFlight);
    return { kind: 'rate', requestsPerSecond, arrival, ...(burstiness !== undefined && { burstiness }), maxInFlight, requests };
  }
  if (flags.concurrency !== undefined) {
    const concurrencies = flags.concurrency.split(',').map((part) => positiveInt('--concurrency', part.trim()));
    const requests = flags.requests ? positiveInt('--requests', flags.requests) : Math.max(32, 4 * Math.max(...concurrencies));
    return concurrencies.length === 1
      ? { kind: 'concurrency', concurrency: concurrencies[0]!, requests }
      : { kind: 'sweep', concurrencies, requestsPerLevel: requests };
  }
  const requests = flags.singleStream ?? flags.requests;
  return { kind: 'single-stream', requests: requests ? positiveInt('--single-stream', requests) : DEFAULT_SINGLE_STREAM_REQUESTS };
}
