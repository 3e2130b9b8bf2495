/**
 * quality.accuracy: does a variant answer the sample set as well as the baseline? Pure: takes the stored per-item
 * scores (src/store/accuracy.ts).
 *
 * - Accuracy per variant with a Wilson 95% interval (right at 0 and 1, where the normal interval is not).
 * - Against the baseline, on the items both answered: an exact McNemar test, the two-sided binomial test of the
 *   discordant pairs (items only one of the two got right) at p = 1/2. Paired, because both answer the same items.
 * - Per category, the same accuracy and interval.
 * A variant answered on several server starts counts its worst start (greedy answers should not change between
 * starts; when they do, the lower score is the one to defend).
 */
import { binomialDistribution, probit } from 'simple-statistics';
import type { AccuracyItem, AccuracyPass } from '../../store/accuracy.js';
import type { ResolvedExperiment } from '../spec/types.js';

export interface Proportion {
  correct: number;
  items: number;
  accuracy: number;
  /** Wilson 95% interval. */
  low: number;
  high: number;
}

export interface McNemar {
  /** Items the baseline got right and the variant wrong, and the reverse. */
  baselineOnly: number;
  variantOnly: number;
  /** Items both answered (the pairs). */
  pairs: number;
  /** Exact two-sided p; 1 without discordant pairs. */
  pValue: number;
}

export interface VariantAccuracy {
  variant: string;
  /** Undefined when the variant has no stored pass. */
  overall?: Proportion;
  /** Accuracy minus the baseline's, on the paired items (a share: −0.031 = −3.1 points). */
  delta?: number;
  mcnemar?: McNemar;
  /** It lost items to the baseline and McNemar's p is below the experiment's verdict alpha. */
  worse?: boolean;
  categories: Array<{ category: string } & Proportion>;
}

export interface AccuracyReport {
  baseline: string;
  /** The sample set's file name and scorer, for headings. */
  file: string;
  scorer: string;
  /** Baseline first, then the others in the experiment's order. */
  variants: VariantAccuracy[];
}

const Z95 = probit(0.975);

/** Wilson score interval at 95% of `correct` out of `items` (items > 0). */
export function wilson(correct: number, items: number): { low: number; high: number } {
  const p = correct / items;
  const z2 = Z95 * Z95;
  const centre = (p + z2 / (2 * items)) / (1 + z2 / items);
  const half = (Z95 / (1 + z2 / items)) * Math.sqrt((p * (1 - p)) / items + z2 / (4 * items * items));
  // At 0 and items the bound is exactly 0 or 1; rounding would leave 0.9999999999999999.
  return { low: correct === 0 ? 0 : centre - half, high: correct === items ? 1 : centre + half };
}

function proportion(correct: number, items: number): Proportion {
  return { correct, items, accuracy: correct / items, ...wilson(correct, items) };
}

/** Exact McNemar: two-sided binomial test of b against b + c discordant pairs at p = 1/2. */
export function mcnemarExact(baselineOnly: number, variantOnly: number, pairs: number): McNemar {
  const discordant = baselineOnly + variantOnly;
  if (discordant === 0) return { baselineOnly, variantOnly, pairs, pValue: 1 };
  const cells = binomialDistribution(discordant, 0.5) ?? [];
  const tail = cells.slice(0, Math.min(baselineOnly, variantOnly) + 1).reduce((sum, cell) => sum + cell, 0);
  return { baselineOnly, variantOnly, pairs, pValue: Math.min(1, 2 * tail) };
}

/** The pass a variant is judged by: its lowest-scoring start. */
function worstAt(passes: readonly AccuracyPass[]): AccuracyPass | undefined {
  const score = (pass: AccuracyPass): number => pass.items.filter((item) => item.correct).length / Math.max(1, pass.items.length);
  return passes.reduce<AccuracyPass | undefined>((worst, pass) => (worst === undefined || score(pass) < score(worst) ? pass : worst), undefined);
}

function categoriesOf(items: readonly AccuracyItem[]): VariantAccuracy['categories'] {
  const names = [...new Set(items.flatMap((item) => (item.category === undefined ? [] : [item.category])))].sort();
  return names.map((category) => {
    const own = items.filter((item) => item.category === category);
    return { category, ...proportion(own.filter((item) => item.correct).length, own.length) };
  });
}

export function judgeAccuracy(
  passes: readonly AccuracyPass[],
  baseline: string,
  variants: readonly string[],
  labels: { file: string; scorer: string },
  alpha: number,
): AccuracyReport {
  const reference = worstAt(passes.filter((pass) => pass.variant === baseline));
  const byItem = new Map(reference?.items.map((item) => [item.item, item.correct]));
  const ordered = [baseline, ...variants.filter((variant) => variant !== baseline)];
  return {
    baseline,
    ...labels,
    variants: ordered.map((variant): VariantAccuracy => {
      const pass = worstAt(passes.filter((candidate) => candidate.variant === variant));
      if (!pass || pass.items.length === 0) return { variant, categories: [] };
      const overall = proportion(pass.items.filter((item) => item.correct).length, pass.items.length);
      const entry: VariantAccuracy = { variant, overall, categories: categoriesOf(pass.items) };
      if (variant === baseline || !reference) return entry;
      const paired = pass.items.filter((item) => byItem.has(item.item));
      if (paired.length === 0) return entry;
      const baselineOnly = paired.filter((item) => byItem.get(item.item) && !item.correct).length;
      const variantOnly = paired.filter((item) => !byItem.get(item.item) && item.correct).length;
      const mcnemar = mcnemarExact(baselineOnly, variantOnly, paired.length);
      const delta = (variantOnly - baselineOnly) / paired.length;
      return { ...entry, delta, mcnemar, worse: delta < 0 && mcnemar.pValue < alpha };
    }),
  };
}

/** The experiment's accuracy report from its stored passes; undefined when it has no quality.accuracy. */
export function experimentAccuracy(experiment: ResolvedExperiment, passes: readonly AccuracyPass[]): AccuracyReport | undefined {
  const settings = experiment.quality?.accuracy;
  if (!settings) return undefined;
  const file = settings.path.split(/[\\/]/).pop() ?? settings.path;
  return judgeAccuracy(
    passes,
    experiment.baseline,
    experiment.variants.map((variant) => variant.name),
    { file, scorer: settings.scorer },
    experiment.verdict.alpha,
  );
}

/** Accuracy per measured config, for subjectTo.accuracy (best.ts, race.ts). */
export function accuracies(report: AccuracyReport): Map<string, number> {
  return new Map(report.variants.flatMap((entry) => (entry.overall ? [[entry.variant, entry.overall.accuracy] as const] : [])));
}
