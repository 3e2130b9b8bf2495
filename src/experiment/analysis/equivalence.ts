/**
 * quality.equivalence: do a variant's greedy answers match the baseline's, as far as the baseline matches itself?
 * Pure: takes the stored passes (src/store/equivalence.ts), compares with src/metrics/output-match.ts.
 *
 * The A/A floor is how much the baseline disagrees with itself: its first pass against its passes on later server
 * starts and against its pass at concurrency N (batching changes kernels, so real engines flip near-tied tokens).
 * A variant is judged by its worst pass against that same first pass, its batched ones included.
 * Status thresholds, from that floor:
 * - equivalent: the variant disagrees no more than the floor allows: token disagreement at most twice the floor's
 *   (exact agreement when the floor is exact), identical share at most one prompt below the floor's (none below an
 *   exact floor). Twice and one prompt because the floor is itself one small sample.
 * - numerics-level divergence: not equivalent, but the answers part late, as numerical noise makes them: the median
 *   first divergence is no earlier than the floor's earliest (a quarter of the output length when the floor never
 *   diverged). Long identical prefixes are what reduced precision or another kernel give; a changed model diverges early.
 * - outputs changed: anything else (the answers differ early or widely).
 * - inconclusive: the floor is broken, its token agreement under 50% (SANE_FLOOR_AGREEMENT): twice its
 *   disagreement is then 100%, so answers of any kind would pass as equivalent; and batching or a restart of a
 *   sound engine flips near-tied tokens late (91.7% on an H100 at concurrency 32), it does not replace most of them.
 *   A baseline that far from itself does not decode reproducibly (sampling left on, a seed per request, a bug), and
 *   no variant can be judged against it.
 */
import { compareOutputs, type OutputMatch } from '../../metrics/output-match.js';
import type { EquivalencePass } from '../../store/equivalence.js';
import { formatAgreement } from '../../util/format.js';
import type { ResolvedExperiment } from '../spec/types.js';

export type EquivalenceStatus = 'equivalent' | 'numerics-level divergence' | 'outputs changed' | 'inconclusive';

/** An A/A floor whose token agreement is below this is broken: every variant's status is then inconclusive (see above). */
export const SANE_FLOOR_AGREEMENT = 0.5;

export interface AaFloor {
  identicalShare: number;
  tokenAgreement: number;
  /** Earliest first divergence in any A/A comparison; undefined when the baseline always matched itself. */
  earliestDivergence?: number;
  /** What was compared, e.g. "start 2", "c=16". */
  comparisons: string[];
}

export interface VariantEquivalence {
  variant: string;
  /** Undefined when the variant or the baseline has no pass to compare. */
  status?: EquivalenceStatus;
  /** Against the baseline's first pass: the variant's worst pass (lowest token agreement), one at a time or batched. */
  match?: OutputMatch;
  /** Which of the variant's passes that was, e.g. "c=1", "c=16", "start 2 c=16" (not a key named `pass` or `…Pass`: JSON views hide
   * a key named like a password). */
  worstAt?: string;
}

export interface EquivalenceReport {
  baseline: string;
  /** Undefined when the baseline has no second pass (another start or concurrency N) to compare. */
  floor?: AaFloor;
  variants: VariantEquivalence[];
}

/** The share `outputMatch` constraints read, per config: token agreement with the baseline (the baseline itself: 1) with a comparison, for best.ts and race.ts. */
export function outputMatches(report: EquivalenceReport): Map<string, number> {
  const matches = new Map<string, number>([[report.baseline, 1]]);
  for (const entry of report.variants) if (entry.match?.tokenAgreement !== undefined) matches.set(entry.variant, entry.match.tokenAgreement);
  return matches;
}

/** A pass among one variant's, by its start (the first unnamed) and concurrency: "c=16", "start 2", "start 2 c=16". */
function passLabel(pass: EquivalencePass, passes: readonly EquivalencePass[]): string {
  const start = [...new Set(passes.map((each) => each.serverId))].indexOf(pass.serverId) + 1;
  if (start === 1) return `c=${pass.concurrency}`;
  return `start ${start}${pass.concurrency === 1 ? '' : ` c=${pass.concurrency}`}`;
}

function aaFloor(passes: readonly EquivalencePass[]): AaFloor | undefined {
  const reference = passes.find((pass) => pass.concurrency === 1);
  if (!reference) return undefined;
  const others = passes.filter((pass) => pass !== reference && (pass.serverId !== reference.serverId || pass.concurrency !== 1));
  if (others.length === 0) return undefined;
  const matches = others.map((pass) => ({ match: compareOutputs(reference.outputs, pass.outputs), label: passLabel(pass, passes) }));
  const divergences = matches.flatMap(({ match }) => (match.firstDivergence ? [match.firstDivergence.min] : []));
  return {
    identicalShare: Math.min(...matches.map(({ match }) => match.identicalShare ?? 1)),
    tokenAgreement: Math.min(...matches.map(({ match }) => match.tokenAgreement ?? 1)),
    ...(divergences.length > 0 && { earliestDivergence: Math.min(...divergences) }),
    comparisons: matches.map(({ label }) => label),
  };
}

/** The floor is broken: the baseline disagrees with itself beyond what batching or a restart explains. */
export function brokenFloor(floor: AaFloor | undefined): boolean {
  return floor !== undefined && floor.tokenAgreement < SANE_FLOOR_AGREEMENT;
}

/** What a status means, in the words every view uses (the status itself names it: "inconclusive (…)"). */
export function statusNote(status: EquivalenceStatus, floor: AaFloor | undefined): string {
  switch (status) {
    case 'equivalent':
      return 'within the A/A floor';
    case 'numerics-level divergence':
      return 'differs beyond the floor, but late, as numerics do';
    case 'outputs changed':
      return 'answers differ early or widely: a faster config that changes the answers is not a win';
    case 'inconclusive':
      return `the baseline disagrees with itself: token agreement ${formatAgreement(floor?.tokenAgreement)} in its A/A floor, below ${formatAgreement(SANE_FLOOR_AGREEMENT)}; no config can be judged against it`;
  }
}

/** The status of one comparison with the baseline, given the floor and the answers' requested length. */
export function equivalenceStatus(match: OutputMatch, floor: AaFloor | undefined, outputTokens: number): EquivalenceStatus {
  if (brokenFloor(floor)) return 'inconclusive';
  const floorAgreement = floor?.tokenAgreement ?? 1;
  const floorIdentical = floor?.identicalShare ?? 1;
  const agreement = match.tokenAgreement ?? 1;
  const identical = match.identicalShare ?? 1;
  const slack = floorIdentical < 1 && match.prompts > 0 ? 1 / match.prompts : 0;
  if (1 - agreement <= 2 * (1 - floorAgreement) && identical >= floorIdentical - slack) return 'equivalent';
  const late = floor?.earliestDivergence ?? outputTokens / 4;
  return match.firstDivergence && match.firstDivergence.median >= late ? 'numerics-level divergence' : 'outputs changed';
}

export function judgeEquivalence(passes: readonly EquivalencePass[], baseline: string, variants: readonly string[], outputTokens: number): EquivalenceReport {
  const base = passes.filter((pass) => pass.variant === baseline);
  const reference = base.find((pass) => pass.concurrency === 1);
  const floor = aaFloor(base);
  return {
    baseline,
    ...(floor && { floor }),
    variants: variants
      .filter((variant) => variant !== baseline)
      .map((variant): VariantEquivalence => {
        // Every pass, batched ones included: answers that change only in a batch are changed answers.
        const own = passes.filter((pass) => pass.variant === variant);
        if (!reference || own.length === 0) return { variant };
        const worst = own
          .map((pass) => ({ match: compareOutputs(reference.outputs, pass.outputs), worstAt: passLabel(pass, own) }))
          .reduce((a, b) => ((b.match.tokenAgreement ?? 1) < (a.match.tokenAgreement ?? 1) ? b : a));
        return { variant, status: equivalenceStatus(worst.match, floor, outputTokens), ...worst };
      }),
  };
}

/** The experiment's equivalence verdicts from its stored passes; undefined when it has no quality.equivalence. */
export function experimentEquivalence(experiment: ResolvedExperiment, passes: readonly EquivalencePass[]): EquivalenceReport | undefined {
  const settings = experiment.quality?.equivalence;
  if (!settings) return undefined;
  const variants = experiment.variants.map((variant) => variant.name);
  return judgeEquivalence(passes, experiment.baseline, variants, settings.outputTokens);
}
