/**
 * How a config's output-equivalence status counts for feasibility: the one table (issue 34, "One conclusion") the
 * best-config ranking and the race read, so every view shows the same verdict with the same reason. Pure.
 *
 * | status                      | by default               | under subjectTo: { outputs: equivalent } |
 * |-----------------------------|--------------------------|------------------------------------------|
 * | equivalent                  | feasible                 | feasible                                 |
 * | numerics-level divergence   | feasible, with a note    | infeasible                               |
 * | outputs changed             | infeasible               | infeasible                               |
 * | inconclusive                | feasible, with a warning | infeasible                               |
 * | not measured                | feasible                 | infeasible (the constraint turns quality.equivalence on, so a config left without answers failed its pass: unproven) |
 *
 * The baseline is the reference, feasible whatever the floor. A numeric subjectTo.outputMatch is judged on its own
 * (best.ts), and warned of when the baseline itself would break it (`outputMatchFloorWarning`).
 */
import { formatAgreement } from '../../util/format.js';
import { holds } from '../spec/constraint.js';
import type { Objective } from '../spec/types.js';
import { type EquivalenceReport, type EquivalenceStatus, statusNote } from './equivalence.js';

/** A feasible config's caveat: shown beside it in the ranking. */
export interface Caveat {
  kind: 'note' | 'warning';
  text: string;
}

export interface OutputsFeasibility {
  /** Why the config's answers make it infeasible; empty when they do not. */
  violations: string[];
  caveats: Caveat[];
}

/** The table's row for one status; `required`: the objective has subjectTo: { outputs: equivalent }. */
export function statusFeasibility(status: EquivalenceStatus | undefined, required: boolean, report: EquivalenceReport): OutputsFeasibility {
  const feasible = { violations: [], caveats: [] };
  if (status === undefined) return required ? { violations: ['outputs not measured (needs equivalent)'], caveats: [] } : feasible;
  if (status === 'equivalent') return feasible;
  // "outputs changed (…)", "outputs inconclusive (…)": the status names what it judged.
  const text = `${status === 'outputs changed' ? '' : 'outputs '}${status} (${statusNote(status, report.floor)})`;
  if (required) return { violations: [`${text}; needs equivalent`], caveats: [] };
  if (status === 'outputs changed') return { violations: [text], caveats: [] };
  return { violations: [], caveats: [{ kind: status === 'inconclusive' ? 'warning' : 'note', text }] };
}

/** A config's feasibility from its answers under the objective; nothing without quality.equivalence. */
export function outputsFeasibility(objective: Objective, report: EquivalenceReport | undefined, variant: string): OutputsFeasibility {
  if (!report || variant === report.baseline) return { violations: [], caveats: [] };
  const status = report.variants.find((entry) => entry.variant === variant)?.status;
  return statusFeasibility(status, objective.outputs === 'equivalent', report);
}

/**
 * A numeric subjectTo.outputMatch the baseline's own A/A floor breaks: batching or a restart moves the baseline that
 * far, so the constraint rules out lossless configs too; the status under `outputs: equivalent` judges against the floor.
 */
export function outputMatchFloorWarning(objective: Objective, report: EquivalenceReport | undefined): string | undefined {
  const constraint = objective.outputMatch;
  const floor = report?.floor;
  if (!constraint || !floor || holds(floor.tokenAgreement, constraint.op, constraint.value)) return undefined;
  return `subjectTo.outputMatch "${constraint.op} ${constraint.value}" is stricter than this run's A/A floor: ${report.baseline} agrees with itself on ${formatAgreement(floor.tokenAgreement)} of tokens (${floor.comparisons.join(', ')}), so a lossless config breaks it too; use subjectTo: { outputs: equivalent }, which judges against the floor`;
}
