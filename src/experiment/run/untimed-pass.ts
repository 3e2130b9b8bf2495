/**
 * One untimed pass of the quality checks (equivalence, accuracy): fixed prompts sent greedily to a variant on its
 * running server, before the start's trials, with every answer kept. No validity rules: a failed request is an
 * answer that failed, for the check to judge; timings are thrown away.
 */
import type { PromptSource, RequestOutput, Workload } from '../../load/types.js';
import type { ResolvedVariant } from '../spec/types.js';
import type { RunContext } from './context.js';
import type { ServerHandle } from './server-lifecycle.js';
import { benchOptionsOf } from './trial.js';

export interface UntimedPass {
  /** Names the pass in the bench options (`label`, the cache record). */
  label: string;
  workload: Workload;
  prompts: PromptSource;
  warmupRequests: number;
  /** True: every answer runs to its length (equivalence compares fixed lengths); false: the model stops itself. */
  ignoreEos: boolean;
}

/** The pass's answers (failed ones included, with their error); throws when the load client returned none. */
export async function untimedOutputs(context: RunContext, server: ServerHandle, variant: ResolvedVariant, pass: UntimedPass): Promise<RequestOutput[]> {
  // Its own warm-up (the pass's), not the trials' per-workload one: answers are compared, not timed.
  const {
    warmupMs: _duration,
    warmupPerLevel: _perLevel,
    ...options
  } = benchOptionsOf(variant, { label: pass.label, workload: pass.workload }, server.profile, server.running, { record: pass.label });
  const result = await context.executor.bench({
    ...options,
    prompts: pass.prompts,
    warmupRequests: pass.warmupRequests,
    ignoreEos: pass.ignoreEos,
    requireFullOutput: false,
    maxFailedFraction: 1,
    specMetrics: 'none',
    collectOutputs: true,
    signal: context.signal,
  });
  const outputs = result.outputs ?? [];
  if (outputs.length === 0) throw new Error('the load client returned no answers');
  return outputs;
}

/** "; 8 failed (http-5xx 6, timeout 2)" for a pass's log line, so a half-answered pass says why; "" when none failed. */
export function failedAnswers(outputs: readonly RequestOutput[]): string {
  const kinds = new Map<string, number>();
  for (const output of outputs) if (output.error !== undefined) kinds.set(output.error, (kinds.get(output.error) ?? 0) + 1);
  const failed = [...kinds.values()].reduce((sum, count) => sum + count, 0);
  return failed === 0 ? '' : `; ${failed} failed (${[...kinds].map(([kind, count]) => `${kind} ${count}`).join(', ')})`;
}
