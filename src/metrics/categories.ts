import { type LevelInput, summarizeLevel } from './summary.js';
import type { CategoryResult, RequestSample, SpecDecodeStats } from './types.js';

/** The categories present in a level's samples, in first-seen order; empty when none has one. */
export function categoriesOf(samples: readonly RequestSample[]): string[] {
  const seen = new Set<string>();
  for (const sample of samples) if (sample.category !== undefined) seen.add(sample.category);
  return [...seen];
}

/**
 * A level's figures per category (requests without one are grouped as "(none)"), over the level's own wall time.
 * `specOf` gives a category's spec-decoding stats from its requests alone, or undefined.
 */
export function summarizeCategories(input: LevelInput, specOf: (samples: RequestSample[]) => SpecDecodeStats | undefined): CategoryResult[] | undefined {
  const categories = categoriesOf(input.samples);
  if (categories.length === 0) return undefined;
  const groups = new Map<string, RequestSample[]>();
  for (const sample of input.samples) {
    const key = sample.category ?? '(none)';
    const group = groups.get(key);
    if (group) group.push(sample);
    else groups.set(key, [sample]);
  }
  return [...groups].map(([category, samples]) => {
    const spec = specOf(samples);
    const {
      label: _label,
      concurrency: _concurrency,
      targetRequestsPerSecond: _target,
      samples: _samples,
      rate: _rate,
      stopped: _stopped,
      ...figures
    } = summarizeLevel({
      label: category,
      durationS: input.durationS,
      samples,
      ...(input.slo !== undefined && { slo: input.slo }),
      ...(spec !== undefined && { spec }),
    });
    return { category, ...figures };
  });
}
