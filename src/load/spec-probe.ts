/**
 * A level's speculative-decoding stats: counters scraped before and after it, per-request figures of its responses,
 * the best source of the two (see ./spec.ts), with the verify-step time.
 */
import type { Dispatcher } from 'undici';
import type { RequestOutcome } from './request.js';
import {
  counterSource,
  type SpecCounters,
  scrapeSglangServerInfo,
  scrapeSpecCounters,
  specFromCounterDelta,
  specFromResponses,
  withVerifyStepTime,
} from './spec.js';
import type { BenchOptions, RequestSample, SpecDecodeStats } from './types.js';

export interface SpecProbe {
  before: () => Promise<void>;
  after: (outcomes: readonly RequestOutcome[]) => Promise<SpecDecodeStats | undefined>;
}

/** Per-request figures, plus what only the counters have (accepted length, per-position acceptance). */
function withCounterExtras(fromResponses: SpecDecodeStats, fromCounters: SpecDecodeStats): SpecDecodeStats {
  const extras = {
    ...(fromResponses.meanAcceptedLength === undefined &&
      fromCounters.meanAcceptedLength !== undefined && { meanAcceptedLength: fromCounters.meanAcceptedLength }),
    ...(fromCounters.acceptanceByPosition && { acceptanceByPosition: fromCounters.acceptanceByPosition }),
    ...(fromResponses.verifySteps === undefined && fromCounters.verifySteps !== undefined && { verifySteps: fromCounters.verifySteps }),
  };
  return Object.keys(extras).length === 0 ? fromResponses : { ...fromResponses, ...extras, source: `${fromResponses.source} + ${fromCounters.source}` };
}

/** SGLang's adaptive tier at the level's end, beside the stats; changed when the scrape before it saw another. */
function withTier(stats: SpecDecodeStats, before: SpecCounters | undefined, after: SpecCounters | undefined): SpecDecodeStats {
  const tier = after?.tier;
  if (!tier) return stats;
  const changed = before?.tier !== undefined && (before.tier.numSteps !== tier.numSteps || before.tier.numDraftTokens !== tier.numDraftTokens);
  return { ...stats, adaptiveTier: { ...tier, changed } };
}

export function specProbe(options: BenchOptions, dispatcher: Dispatcher, baseUrl: string): SpecProbe {
  let before: SpecCounters | undefined;
  /** The level's stats from the best source (see ./spec.ts). */
  const counted = async (outcomes: readonly RequestOutcome[], after: SpecCounters | undefined): Promise<SpecDecodeStats | undefined> => {
    const fromResponses = specFromResponses(outcomes.filter((outcome) => !outcome.sample.error).map((outcome) => outcome.state));
    const fromCounters = before && after && after.engine === before.engine ? specFromCounterDelta(before, after, counterSource(after)) : undefined;
    if (fromResponses) return fromCounters ? withCounterExtras(fromResponses, fromCounters) : fromResponses;
    if (fromCounters) return fromCounters;
    return options.backend === 'sglang' ? scrapeSglangServerInfo(dispatcher, baseUrl) : undefined;
  };
  return {
    async before() {
      if (options.specMetrics === 'none') return;
      before = await scrapeSpecCounters(dispatcher, baseUrl);
    },
    async after(outcomes) {
      if (options.specMetrics === 'none') return undefined;
      const after = before && (await scrapeSpecCounters(dispatcher, baseUrl));
      const stats = await counted(outcomes, after);
      return (
        stats &&
        withTier(
          withVerifyStepTime(
            stats,
            outcomes.map((outcome) => outcome.sample),
          ),
          before,
          after,
        )
      );
    },
  };
}

/** A category's spec stats: per-request counters of its completed requests (server-wide counters cannot be split). */
export function categorySpec(outcomes: readonly RequestOutcome[], samples: readonly RequestSample[], options: BenchOptions): SpecDecodeStats | undefined {
  if (options.specMetrics === 'none') return undefined;
  const wanted = new Set(samples);
  const stats = specFromResponses(outcomes.filter((outcome) => wanted.has(outcome.sample) && !outcome.sample.error).map((outcome) => outcome.state));
  return stats && withVerifyStepTime(stats, samples);
}
