import { median } from 'simple-statistics';
import { listRaceEvents } from '../../store/campaign.js';
import type { Db } from '../../store/db.js';
import { listTrials } from '../../store/queries.js';
import { runServers } from '../../store/reads.js';
import { listSearchSteps } from '../../store/search.js';
import { formatDuration, formatPredicted } from '../../util/format.js';
import type { Conclusion } from '../analysis/conclusion.js';
import { measuredOnly } from '../analysis/search.js';
import { speculativeSchedule } from '../analysis/spec-schedule.js';
import { loadCostModel, predictPlan } from '../plan/budget.js';
import { planExperiment } from '../plan/plan.js';
import { formatAccuracy } from '../text/accuracy-format.js';
import { formatBestVerdict, formatSpecView, hasSpecFigures } from '../text/best-format.js';
import { formatEquivalence } from '../text/equivalence-format.js';
import { gpuHoursText } from '../text/plan-format.js';
import { formatSearchSummary, formatSpecSchedule } from '../text/search-format.js';
import { loadRun } from './run-store.js';

/**
 * A run's campaign view of its conclusion: race decisions, the best-config verdict, output equivalence, accuracy,
 * the speculative-decoding table, GPU-hours. `conclusion`: the one the caller's other sections render
 * (report/queries.ts `loadConclusion`).
 */
export function campaignSummary(db: Db, runId: number, conclusion: Conclusion): string {
  const { run, experiment } = loadRun(db, runId);
  const trials = listTrials(db, runId);
  const events = listRaceEvents(db, runId);
  const { best, search, equivalence, accuracy } = conclusion;
  const lines: string[] = [];
  const stop = events.find((event) => event.kind === 'stop');
  if (experiment.stopping === 'race' || stop) lines.push(stop ? `campaign: ${stop.reason}` : 'campaign: ran to its trial cap without a clear winner', '');
  if (best) lines.push(formatBestVerdict(experiment, best), '');
  if (equivalence) lines.push(formatEquivalence(equivalence), '');
  if (accuracy) lines.push(formatAccuracy(accuracy), '');
  if (hasSpecFigures(trials)) lines.push('speculative decoding (medians over trials):', formatSpecView(measuredOnly(experiment, trials), trials), '');

  // Used: wall time of the run × GPUs per server × lanes (each holds its GPUs throughout, as the prediction counts
  // them); full grid: the interleaved plan of every trial at today's costs.
  const wallMs = Date.parse(run.finishedAt ?? new Date().toISOString()) - Date.parse(run.startedAt);
  const gpus = (experiment.budget?.gpusPerServer ?? 1) * Math.max(1, experiment.lanes?.length ?? 1);
  const input = {
    variants: experiment.variants,
    workloads: experiment.workloads.map((workload) => workload.label),
    repetitions: experiment.trials,
    seed: experiment.seed,
  };
  const costs = loadCostModel(db, experiment);
  // The stored experiment hides secret flag values, so its startup keys miss the history the runner recorded under
  // the real ones: this run's own startups stand in (else a 2 s simulator start was predicted at a profile's 3 min),
  // and for a config it never started (a search's unmeasured points) those of its other configs, the same server
  // with other flags (else 643 simulator starts of a search's grid were predicted at 29 h).
  const servers = runServers(db, runId).filter((server) => server.readyMs !== undefined);
  const readyOf = (list: typeof servers): number[] => list.map((server) => server.readyMs!);
  for (const [serverKey, estimate] of Object.entries(costs.startups)) {
    if (estimate.source === 'history') continue;
    const own = readyOf(servers.filter((server) => server.serverKey === serverKey));
    const stand = own.length > 0 ? own : readyOf(servers);
    if (stand.length > 0) costs.startups[serverKey] = { ms: median(stand), source: 'history', samples: stand.length };
  }
  const full = predictPlan(planExperiment(input), experiment, costs);
  // A search's answer (best config per level and across them, within its tolerance) is the run's conclusion, and its
  // last lines: no ranking stands beside it.
  if (search) lines.push(...formatSpecSchedule(speculativeSchedule(experiment, listSearchSteps(db, runId)), runId));
  lines.push(
    `GPU-hours: ${gpuHoursText((wallMs / 3_600_000) * gpus)} used (${formatDuration(wallMs)} × ${gpus} GPU${gpus === 1 ? '' : 's'}, ${trials.length} trials) vs ${gpuHoursText(full.gpuHours)} predicted for the full interleaved grid (${formatPredicted(full.wallMs)}, ${full.trials} trials, ${full.restarts} restarts${full.uncountedPasses ? `; not counted: ${full.uncountedPasses.join(', ')}` : ''})`,
  );
  if (search) lines.push('', formatSearchSummary(search));
  return lines.join('\n');
}
