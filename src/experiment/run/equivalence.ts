/**
 * quality.equivalence in a run: at each server start, before its trials, every variant of the start answers the same
 * prompts greedily (temperature 0, ignore_eos, fixed length), untimed, one at a time and all at once (concurrency N):
 * the baseline's batched answers are part of its A/A floor, and a variant's are judged against the same floor, so a
 * variant whose answers change only when batched is caught. Before the trials, so no trial's timing includes them, and before any trial's
 * cache reset; cold trials salt their prompts, so these unsalted ones share no prefix with them (a warm-cache run
 * sends the same prompts as its trials anyway).
 */
import type { PromptSource } from '../../load/types.js';
import type { Db } from '../../store/db.js';
import { listEquivalencePasses } from '../../store/equivalence.js';
import { EQUIVALENCE_WARMUP_REQUESTS } from '../../util/defaults.js';
import { messageOf } from '../../util/errors.js';
import { type EquivalenceReport, experimentEquivalence } from '../analysis/equivalence.js';
import type { EquivalenceSettings, ResolvedExperiment, ResolvedVariant } from '../spec/types.js';
import type { RunContext } from './context.js';
import type { ServerHandle } from './server-lifecycle.js';
import { failedAnswers, untimedOutputs } from './untimed-pass.js';

/** The baseline's prompt source with every answer `outputTokens` long: the same prompts for every variant. */
function equivalencePrompts(source: PromptSource, outputTokens: number): PromptSource {
  if (source.kind === 'synthetic' || source.kind === 'sessions' || source.kind === 'shared-prefix') {
    return { ...source, outputTokens: { kind: 'fixed', value: outputTokens } };
  }
  return { ...source, maxOutputTokens: outputTokens };
}

/** Send and store the passes of this start's variants; a pass that fails is logged and left out (its status: not measured). */
export async function sendEquivalencePasses(context: RunContext, server: ServerHandle, variants: readonly ResolvedVariant[]): Promise<void> {
  const { experiment } = context;
  const settings = experiment.quality?.equivalence;
  if (!settings) return;
  const baseline = experiment.variants.find((variant) => variant.name === experiment.baseline)!;
  const prompts = equivalencePrompts(baseline.client.prompts, settings.outputTokens);
  for (const variant of variants) {
    const concurrencies = settings.prompts > 1 ? [1, settings.prompts] : [1];
    for (const concurrency of concurrencies) {
      context.signal.throwIfAborted();
      try {
        await sendPass(context, server, variant, settings, prompts, concurrency);
      } catch (error) {
        context.signal.throwIfAborted();
        context.log(`equivalence: ${variant.name} (c=${concurrency}) not measured on this start: ${messageOf(error)}`);
      }
    }
  }
}

async function sendPass(
  context: RunContext,
  server: ServerHandle,
  variant: ResolvedVariant,
  settings: EquivalenceSettings,
  prompts: PromptSource,
  concurrency: number,
): Promise<void> {
  const workload =
    concurrency === 1
      ? { kind: 'single-stream' as const, requests: settings.prompts }
      : { kind: 'concurrency' as const, concurrency, requests: settings.prompts };
  const startedAt = new Date().toISOString();
  const outputs = await untimedOutputs(context, server, variant, {
    label: 'equivalence',
    workload,
    prompts,
    warmupRequests: EQUIVALENCE_WARMUP_REQUESTS,
    ignoreEos: true,
  });
  const failed = outputs.filter((output) => output.error !== undefined).length;
  context.journal.equivalencePass({ variant: variant.name, serverId: server.rowId, concurrency, startedAt, outputs });
  context.log(
    `equivalence: ${variant.name} answered ${outputs.length - failed}/${outputs.length} prompts (c=${concurrency}, untimed)${failedAnswers(outputs)}`,
  );
}

/** The run's equivalence verdicts so far, for the race's feasibility; undefined without the check. */
export function storedEquivalence(db: Db, runId: number, experiment: ResolvedExperiment): EquivalenceReport | undefined {
  return experimentEquivalence(experiment, listEquivalencePasses(db, runId));
}
