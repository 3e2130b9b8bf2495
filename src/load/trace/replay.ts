import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import type { PromptMeasure } from '../datasets/load.js';
import { type PromptItem, saltPrompts } from '../prompts.js';
import type { ModelTokenizer } from '../tokenizers/model.js';
import type { ClientOptions } from '../types.js';
import { traceItems } from './prompts.js';
import type { TraceSource } from './types.js';

/** Salt of a trace's warm-up prompts: words no measured prompt opens with, so the warm-up caches none of the trace's blocks. */
const WARMUP_SALT = 0x7ace;

/**
 * The measured prompts of a trace workload (the window's first `requests`, each with its arrival); undefined for
 * other workloads. Throws a usage error when the prompts are not a trace or the window holds too few requests.
 */
export async function replayedTrace(options: Pick<ClientOptions, 'workload' | 'prompts'>, measure: PromptMeasure): Promise<PromptItem[] | undefined> {
  const { workload, prompts } = options;
  if (workload.kind !== 'trace') return undefined;
  if (prompts.kind !== 'trace')
    throw new UserError(
      'a trace workload replays a trace, but the prompts are not one',
      'give --trace FILE --trace-format FORMAT (in a file: client.prompts {kind: trace, path, format})',
      ExitCode.usage,
    );
  const items = await traceItems(prompts, measure);
  const requests = workload.requests ?? items.length;
  if (requests > items.length)
    throw new UserError(
      `${prompts.path} holds ${items.length} requests${prompts.window ? ' in the window' : ''}, fewer than the ${requests} asked for`,
      'ask for fewer requests, or widen the window',
      ExitCode.usage,
    );
  return items.slice(0, requests);
}

/**
 * A trace's lengths under another workload (concurrency, rate, capacity): its window's first `count` requests, never
 * cycled, since a repeated request finds its whole prompt cached, beyond the designed hit rate printed beside it.
 */
export async function traceLengths(source: TraceSource, count: number, measure: PromptMeasure): Promise<PromptItem[]> {
  const items = await traceItems(source, measure);
  if (count > items.length)
    throw new UserError(
      `${source.path} holds ${items.length} requests${source.window ? ' in the window' : ''}, fewer than the ${count} measured`,
      'ask for fewer requests (--requests is per level or step), or widen the window',
      ExitCode.usage,
    );
  return items.slice(0, count);
}

/**
 * Measured then warm-up prompts of a trace's requests (see runBenchmark). The warm-up sends the trace's first requests with salted words:
 * it warms the server without leaving the trace's blocks in its prefix cache (the trace's own hits stay its own).
 */
export function replayPrompts(trace: readonly PromptItem[], warmupRequests: number, tokenizer?: ModelTokenizer): PromptItem[] {
  const warmup = Array.from({ length: warmupRequests }, (_, index) => trace[index % trace.length]!);
  return [...trace, ...saltPrompts(warmup, WARMUP_SALT, tokenizer)];
}

/** The offered rate of a replayed stretch: its arrivals over their span; undefined when they all arrive at once. */
export function replayRate(prompts: readonly PromptItem[]): number | undefined {
  if (prompts.length < 2) return undefined;
  const span = (prompts.at(-1)!.arrivalMs ?? 0) - (prompts[0]!.arrivalMs ?? 0);
  return span > 0 ? ((prompts.length - 1) * 1000) / span : undefined;
}
