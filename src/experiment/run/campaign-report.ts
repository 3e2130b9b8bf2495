import { median } from 'simple-statistics';
import { listAccuracyPasses } from '../../store/accuracy.js';
import { listRaceEvents } from '../../store/campaign.js';
import type { Db } from '../../store/db.js';
import { listEquivalencePasses } from '../../store/equivalence.js';
import { listTrials } from '../../store/queries.js';
import { runServers } from '../../store/reads.js';
import { listSearchSteps } from '../../store/search.js';
import { formatDuration, formatPredicted } from '../../util/format.js';
import { type AccuracyReport, accuracies, experimentAccuracy } from '../analysis/accuracy.js';
import { type BestVerdict, bestConfig } from '../analysis/best.js';
import { type EquivalenceReport, experimentEquivalence } from '../analysis/equivalence.js';
import { measuredOnly } from '../analysis/search.js';
import { loadCostModel, predictPlan } from '../plan/budget.js';
import { planExperiment } from '../plan/plan.js';
import { formatAccuracy } from '../text/accuracy-format.js';
import { formatBestVerdict, formatSpecView, hasSpecFigures } from '../text/best-format.js';
import { formatEquivalence } from '../text/equivalence-format.js';
import { gpuHoursText } from '../text/plan-format.js';
import { formatSearchSummary } from '../text/search-format.js';
import { loadRun } from './run-store.js';

/** A run's campaign view: race decisions, the best-config verdict, the speculative-decoding table, GPU-hours. */
export function campaignSummary(db: Db, runId: number): { best: BestVerdict; text: string; equivalence?: EquivalenceReport; accuracy?: AccuracyReport } {
  const { run, experiment, plan } = loadRun(db, runId);
  const trials = listTrials(db, runId);
  const events = listRaceEvents(db, runId);
  const eliminations = events.flatMap((event) =>
    event.kind === 'eliminated' && event.variant !== undefined ? [{ variant: event.variant, afterPass: event.afterPass, reason: event.reason }] : [],
  );
  const equivalence = experimentEquivalence(experiment, listEquivalencePasses(db, runId));
  const accuracy = experimentAccuracy(experiment, listAccuracyPasses(db, runId));
  const scores = accuracy && accuracies(accuracy);
  const judged = measuredOnly(experiment, trials);
  const best = bestConfig(judged, trials, {
    eliminations,
    blocked: plan.schedule === 'blocked',
    ...(equivalence && { equivalence }),
    ...(scores && { accuracy: scores }),
  });
  const lines: string[] = [];
  // A search's answer (best config per level, within its tolerance) leads; the ranking below covers its measured points.
  if (experiment.search) lines.push(formatSearchSummary(experiment, listSearchSteps(db, runId), trials), '');
  const stop = events.find((event) => event.kind === 'stop');
  if (experiment.stopping === 'race' || stop) lines.push(stop ? `campaign: ${stop.reason}` : 'campaign: ran to its trial cap without a clear winner', '');
  if (judged.variants.length > 1) lines.push(formatBestVerdict(judged, best), '');
  if (equivalence) lines.push(formatEquivalence(equivalence), '');
  if (accuracy) lines.push(formatAccuracy(accuracy), '');
  if (hasSpecFigures(trials)) lines.push('speculative decoding (medians over trials):', formatSpecView(experiment, trials), '');

  // Used: wall time of the run × GPUs per server; full grid: the interleaved plan of every trial at today's costs.
  const wallMs = Date.parse(run.finishedAt ?? new Date().toISOString()) - Date.parse(run.startedAt);
  const gpus = experiment.budget?.gpusPerServer ?? 1;
  const input = {
    variants: experiment.variants,
    workloads: experiment.workloads.map((workload) => workload.label),
    repetitions: experiment.trials,
    seed: experiment.seed,
  };
  const costs = loadCostModel(db, experiment);
  // The stored experiment hides secret flag values, so its startup keys miss the history the runner recorded under
  // the real ones: this run's own startups stand in (else a 2 s simulator start was predicted at a profile's 3 min).
  for (const [serverKey, estimate] of Object.entries(costs.startups)) {
    const own = runServers(db, runId).flatMap((server) => (server.serverKey === serverKey && server.readyMs !== undefined ? [server.readyMs] : []));
    if (estimate.source !== 'history' && own.length > 0) costs.startups[serverKey] = { ms: median(own), source: 'history', samples: own.length };
  }
  const full = predictPlan(planExperiment(input), experiment, costs);
  lines.push(
    `GPU-hours: ${gpuHoursText((wallMs / 3_600_000) * gpus)} used (${formatDuration(wallMs)} × ${gpus} GPU${gpus === 1 ? '' : 's'}, ${trials.length} trials) vs ${gpuHoursText(full.gpuHours)} predicted for the full interleaved grid (${formatPredicted(full.wallMs)}, ${full.trials} trials, ${full.restarts} restarts${full.uncountedPasses ? `; not counted: ${full.uncountedPasses.join(', ')}` : ''})`,
  );
  return { best, text: lines.join('\n'), ...(equivalence && { equivalence }), ...(accuracy && { accuracy }) };
}
