/**
 * quality.accuracy in a run: at each server start, before its trials, every variant of the start answers the sample
 * set greedily (temperature 0, one at a time, each stopping where the model stops, at most outputTokens long),
 * untimed; each answer is scored (metrics/answer-score.ts) and stored as the pass completes. Sent unsalted, like the
 * equivalence passes, so no cold trial's prompts share a prefix with them.
 */
import type { DatasetSource } from '../../load/datasets/types.js';
import type { RequestOutput } from '../../load/types.js';
import { parseScorer, type Scorer } from '../../metrics/answer-score.js';
import { type AccuracyItem, listAccuracyPasses } from '../../store/accuracy.js';
import type { Db } from '../../store/db.js';
import { messageOf } from '../../util/errors.js';
import { formatDuration } from '../../util/format.js';
import { accuracies, experimentAccuracy } from '../analysis/accuracy.js';
import { readSampleSet, type SampleItem } from '../spec/sample-set.js';
import type { AccuracySettings, ResolvedExperiment, ResolvedVariant } from '../spec/types.js';
import type { RunContext } from './context.js';
import type { ServerHandle } from './server-lifecycle.js';
import { SCORE_TIME_LIMIT_MS, timedScorer } from './timed-score.js';
import { failedAnswers, untimedOutputs } from './untimed-pass.js';

/** The sample set as the load client reads it: file order, every answer at most `outputTokens` long. */
function samplePrompts(settings: AccuracySettings): DatasetSource {
  return {
    kind: settings.format,
    path: settings.path,
    shuffle: false,
    maxOutputTokens: settings.outputTokens,
    fields: { prompt: settings.fields.prompt, category: settings.fields.category },
  };
}

/** Scored answers, and how many ran over the scorer's time limit; failed requests are left out (not an answer), the caller says how many. */
async function scoreOutputs(
  outputs: readonly RequestOutput[],
  items: readonly SampleItem[],
  scorer: Scorer,
  signal: AbortSignal,
): Promise<{ scored: AccuracyItem[]; overTime: number }> {
  const timed = timedScorer(scorer, signal);
  const scored: AccuracyItem[] = [];
  let overTime = 0;
  try {
    for (const output of outputs) {
      const sample = items[output.prompt];
      if (output.error !== undefined || !sample) continue;
      const score = await timed.score(output.text, sample.answer);
      if (score === undefined) overTime++;
      else scored.push({ item: output.prompt, ...(sample.category !== undefined && { category: sample.category }), ...score });
    }
  } finally {
    await timed.close();
  }
  return { scored, overTime };
}

/** Send, score and store this start's passes; a pass that fails is logged and left out (its accuracy: not measured). */
export async function sendAccuracyPasses(context: RunContext, server: ServerHandle, variants: readonly ResolvedVariant[]): Promise<void> {
  const settings = context.experiment.quality?.accuracy;
  if (!settings) return;
  const items = readSampleSet(settings);
  const scorer = parseScorer(settings.scorer)!;
  for (const variant of variants) {
    context.signal.throwIfAborted();
    try {
      const startedAt = new Date().toISOString();
      const outputs = await untimedOutputs(context, server, variant, {
        label: 'accuracy',
        workload: { kind: 'single-stream', requests: items.length },
        prompts: samplePrompts(settings),
        warmupRequests: 0,
        ignoreEos: false,
      });
      const { scored, overTime } = await scoreOutputs(outputs, items, scorer, context.signal);
      context.journal.accuracyPass({ variant: variant.name, serverId: server.rowId, startedAt, items: scored });
      const correct = scored.filter((item) => item.correct).length;
      const failed = failedAnswers(outputs);
      const slow =
        overTime > 0
          ? `; ${overTime} left out: the scorer ran over ${formatDuration(SCORE_TIME_LIMIT_MS)} on them (a pattern that backtracks? simplify the regex)`
          : '';
      context.log(`accuracy: ${variant.name} ${correct}/${scored.length} right (untimed)${failed && `${failed}, left out`}${slow}`);
    } catch (error) {
      context.signal.throwIfAborted();
      context.log(`accuracy: ${variant.name} not measured on this start: ${messageOf(error)}`);
    }
  }
}

/** Per config, its accuracy, for subjectTo.accuracy; undefined without the check. */
export function storedAccuracies(db: Db, runId: number, experiment: ResolvedExperiment): Map<string, number> | undefined {
  const report = experimentAccuracy(experiment, listAccuracyPasses(db, runId));
  return report && accuracies(report);
}
