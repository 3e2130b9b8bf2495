/**
 * A run's conclusion, the one model every view renders (issue 34, "One conclusion"): each config's quality
 * (equivalence status, token agreement, accuracy) and feasibility under the objective with its reasons; each
 * variant × workload verdict worded with that feasibility ("faster, outputs changed"); the best-config ranking, or for
 * a search run the search's answer instead (its per-level and across-levels best at its tolerance, or "unresolved":
 * a ranking of the measured points by raw medians would be a second estimator naming another "best"); and, on
 * lanes, the lane report (which lane measured what, which lane's level differs, with its fingerprint difference).
 * `run`'s final text, `show` (+ `--json`), `ls`, the Markdown and HTML reports, the UI and `export` read it; none
 * judges a config again or words its verdict otherwise. Pure: computed from stored rows on read (nothing stored),
 * so a run of any earlier version renders the same way.
 */
import type { Fingerprint } from '../../fingerprint/types.js';
import type { TrialRecord } from '../../store/types.js';
import type { ResolvedExperiment, VariantVerdict } from '../spec/types.js';
import { type AccuracyReport, accuracies } from './accuracy.js';
import { type BestVerdict, bestConfig, configFeasibility, type Elimination } from './best.js';
import type { EquivalenceReport, EquivalenceStatus } from './equivalence.js';
import type { Caveat } from './feasibility.js';
import { type LaneReport, laneReport } from './lanes.js';
import type { SearchSummary } from './search-summary.js';

/** One config as the conclusion judges it. */
export interface ConfigConclusion {
  variant: string;
  feasible: boolean;
  /** Why it is infeasible (best.ts `configFeasibility`): "outputs changed (…)", "ttftP99Ms 612 (needs < 500)". */
  violations: string[];
  /** A feasible config's note or warning from its answers (numerics-level divergence, inconclusive). */
  caveats: Caveat[];
  /** quality.equivalence's status; "not measured" when the run checked answers but has none of this config's; absent: no check, or the baseline. */
  equivalence?: EquivalenceStatus | 'not measured';
  /** Token agreement of its worst pass with the baseline's answers. */
  tokenAgreement?: number;
  /** quality.accuracy's share of correct answers. */
  accuracy?: number;
  /** What an infeasible config's verdicts say after their label: "outputs changed", "infeasible: ttftP99Ms 612". */
  tag?: string;
}

/** A variant × workload verdict with the words every view prints. */
export interface ConcludedVerdict extends VariantVerdict {
  /** The verdict's label, and for an infeasible config its tag: "faster", "faster, outputs changed". */
  outcome: string;
  feasible: boolean;
}

export interface Conclusion {
  /** The variant the verdicts compare with; absent for a search, which has none (its space's first point is no reference). */
  baseline?: string;
  /** Every config of the experiment, the baseline included, in the experiment's order. */
  configs: ConfigConclusion[];
  /** Empty for a search run: its per-point decisions (search.table) stand in their place. */
  verdicts: ConcludedVerdict[];
  /** The best-config ranking (pairwise, Holm-corrected); absent where a view asked for verdicts only (`ls`), and for a search run. */
  best?: BestVerdict;
  /** A search run's answer and standing (search-summary.ts): its best configs, in place of `best`. */
  search?: SearchSummary;
  equivalence?: EquivalenceReport;
  accuracy?: AccuracyReport;
  /** A run on lanes: what each lane measured, and each lane whose level differs; absent without lanes or without the ranking. */
  lanes?: LaneReport;
}

export interface ConclusionInput {
  experiment: ResolvedExperiment;
  trials: readonly TrialRecord[];
  /** The verdicts vs the baseline the view counts (stored by the runner, or recomputed on the same trials). */
  verdicts: readonly VariantVerdict[];
  equivalence?: EquivalenceReport;
  accuracy?: AccuracyReport;
  eliminations?: readonly Elimination[];
  blocked: boolean;
  /** Compute the ranking and its pairwise matrix (bootstraps of every pair), and the lane report; `ls` lists many runs and needs none. */
  ranking: boolean;
  /** A stored fingerprint by id: the lane report's fingerprint differences. */
  fingerprintOf?: (id: number) => Fingerprint | undefined;
  /** A search run's summary (from its stored steps): the run's answer, and no ranking beside it. */
  search?: SearchSummary;
}

export function conclude(input: ConclusionInput): Conclusion {
  const { experiment, trials, equivalence, accuracy } = input;
  const scores = accuracy && accuracies(accuracy);
  const judged = configFeasibility(experiment, trials, { ...(equivalence && { equivalence }), ...(scores && { accuracy: scores }) });
  const configs = judged.map((config): ConfigConclusion => {
    const checked = equivalence !== undefined && config.variant !== equivalence.baseline;
    const answers = checked ? equivalence.variants.find((entry) => entry.variant === config.variant) : undefined;
    const status = checked ? (answers?.status ?? 'not measured') : undefined;
    const agreement = answers?.match?.tokenAgreement;
    const share = scores?.get(config.variant);
    const tag = config.feasible ? undefined : tagOf(config.violations, status);
    return {
      ...config,
      ...(status !== undefined && { equivalence: status }),
      ...(agreement !== undefined && { tokenAgreement: agreement }),
      ...(share !== undefined && { accuracy: share }),
      ...(tag !== undefined && { tag }),
    };
  });
  const configOf = new Map(configs.map((config) => [config.variant, config]));
  // A search is judged by its own decisions, never against the first point of its space.
  const verdicts = (input.search ? [] : input.verdicts).map((verdict): ConcludedVerdict => {
    const config = configOf.get(verdict.variant);
    const feasible = config?.feasible ?? true;
    return { ...verdict, outcome: config?.tag ? `${verdict.label}, ${config.tag}` : verdict.label, feasible };
  });
  const best =
    input.ranking && !input.search && experiment.variants.length > 1
      ? bestConfig(experiment, trials, {
          ...(input.eliminations && { eliminations: input.eliminations }),
          blocked: input.blocked,
          ...(equivalence && { equivalence }),
          ...(scores && { accuracy: scores }),
        })
      : undefined;
  const lanes = input.ranking ? laneReport(experiment, trials, input.fingerprintOf ?? (() => undefined)) : undefined;
  return {
    ...(!input.search && { baseline: experiment.baseline }),
    configs,
    verdicts,
    ...(best && { best }),
    ...(input.search && { search: input.search }),
    ...(equivalence && { equivalence }),
    ...(accuracy && { accuracy }),
    ...(lanes && { lanes }),
  };
}

/**
 * An infeasible config's tag: its answers changed says so in those words (a faster config that changes the answers
 * is not a win); any other reason as "infeasible: " and the reason's figure ("ttftP99Ms 612", "accuracy 0.700").
 */
function tagOf(violations: readonly string[], status: ConfigConclusion['equivalence']): string {
  if (status === 'outputs changed') return 'outputs changed';
  const first = violations[0] ?? '';
  const cut = first.indexOf(' (');
  return `infeasible: ${cut > 0 ? first.slice(0, cut) : first}`;
}
