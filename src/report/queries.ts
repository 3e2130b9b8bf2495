/** Assembles everything a report of one run needs from the store's read-only views. */

import { experimentAccuracy } from '../experiment/analysis/accuracy.js';
import { type Conclusion, conclude } from '../experiment/analysis/conclusion.js';
import { experimentEquivalence } from '../experiment/analysis/equivalence.js';
import { measuredOnly } from '../experiment/analysis/search.js';
import { searchSummary } from '../experiment/analysis/search-summary.js';
import { computeVerdicts } from '../experiment/analysis/verdicts.js';
import { storedExperimentOf, storedVerdictsOf } from '../experiment/spec/stored.js';
import type { VariantVerdict } from '../experiment/spec/types.js';
import type { RequestSample } from '../metrics/types.js';
import { listAccuracyPasses } from '../store/accuracy.js';
import { listRaceEvents } from '../store/campaign.js';
import type { Db } from '../store/db.js';
import { listDriftAlarms } from '../store/drift-alarms.js';
import { listEquivalencePasses } from '../store/equivalence.js';
import { getFingerprint, getRun, listTrials, type RunDetail, trialHealth, trialSamples } from '../store/queries.js';
import { fingerprintsByIds, trialLatencies, viewedRuns } from '../store/reads.js';
import type { UnreadableRow } from '../store/row-json.js';
import { listSearchSteps } from '../store/search.js';
import { runTelemetry } from '../store/telemetry.js';
import type { TrialRecord } from '../store/types.js';
import { type RunData, runVerdicts } from './model.js';

/**
 * Everything a report needs about one run, its status as views show it (viewedRuns); undefined when the run is not
 * in the store. Stored values that cannot be read are left out and listed in `unreadable`. `conclusion`: with the
 * run's conclusion and its ranking (default); a comparison of two runs needs neither.
 */
export function loadRunData(db: Db, runId: number, options: { latencies?: boolean; conclusion?: boolean } = {}): RunData | undefined {
  const found = getRun(db, runId);
  if (!found) return undefined;
  const [run] = viewedRuns(db, [found]);
  const unreadable: UnreadableRow[] = [];
  const trials = listTrials(db, runId, unreadable);
  const health = trialHealth(db, runId);
  return {
    run: run!,
    trials,
    fingerprints: fingerprintsByIds(
      db,
      trials.map((trial) => trial.fingerprintId),
      unreadable,
    ),
    // Samples are the bulk of the store; callers that draw no latency chart skip them.
    latencies:
      options.latencies === false
        ? new Map()
        : trialLatencies(
            db,
            trials.map((trial) => trial.id),
          ),
    health,
    telemetry: runTelemetry(db, runId, unreadable),
    driftAlarms: listDriftAlarms(db, runId, unreadable),
    unreadable,
    // The conclusion words the verdicts the report counts: the runner's, or the ones recomputed on the readable trials.
    ...(options.conclusion !== false && {
      conclusion: loadConclusion(db, run!, { trials, verdicts: runVerdicts(run!, trials, health).verdicts, ranking: true }),
    }),
  };
}

export interface ConclusionReadOptions {
  /** The trials the view counts (default: every readable stored trial). */
  trials?: readonly TrialRecord[];
  /** The verdicts the view counts (default: the runner's stored ones, else computed from the trials). */
  verdicts?: readonly VariantVerdict[];
  /** With the best-config ranking (see ConclusionInput.ranking). */
  ranking: boolean;
}

/** A stored run's conclusion (experiment/analysis/conclusion.ts), from its trials, race events, quality passes and fingerprints. */
export function loadConclusion(db: Db, run: RunDetail, options: ConclusionReadOptions): Conclusion {
  const trials = options.trials ?? listTrials(db, run.id);
  const stored = storedExperimentOf(run);
  // A search's answer is its strategy's, over its whole space; its unmeasured points are no contenders in the rest.
  const search = stored.search && searchSummary(stored, listSearchSteps(db, run.id), trials);
  const experiment = measuredOnly(stored, trials);
  const blocked = run.plan.schedule === 'blocked';
  // Runs stored before verdict settings were kept have no alpha to test with: their stored verdicts, no ranking.
  const testable = experiment.verdict !== undefined;
  const verdicts =
    options.verdicts ?? storedVerdictsOf(run) ?? (testable && trials.length > 0 ? computeVerdicts(experiment, trials, trialHealth(db, run.id), blocked) : []);
  const eliminations = listRaceEvents(db, run.id).flatMap((event) =>
    event.kind === 'eliminated' && event.variant !== undefined ? [{ variant: event.variant, afterPass: event.afterPass, reason: event.reason }] : [],
  );
  const equivalence = experimentEquivalence(experiment, listEquivalencePasses(db, run.id));
  const accuracy = experimentAccuracy(experiment, listAccuracyPasses(db, run.id));
  return conclude({
    experiment,
    trials,
    verdicts,
    ...(equivalence && { equivalence }),
    ...(accuracy && { accuracy }),
    eliminations,
    blocked,
    ranking: options.ranking && testable,
    fingerprintOf: (id) => getFingerprint(db, id),
    ...(search && { search }),
  });
}

/**
 * A conclusion as every `--json` view prints it (`show`, `run`, `ls`): the verdicts and configs under `conclusion`,
 * the ranking (or a search's summary) and the quality reports beside it; a race's elimination block counted from 1,
 * as the text says it.
 */
export function conclusionJson({ best, search, equivalence, accuracy, ...conclusion }: Conclusion): {
  conclusion: Omit<Conclusion, 'best' | 'search' | 'equivalence' | 'accuracy'>;
  best?: Conclusion['best'];
  search?: Conclusion['search'];
  equivalence?: Conclusion['equivalence'];
  accuracy?: Conclusion['accuracy'];
} {
  const ranked = best && {
    ...best,
    ranking: best.ranking.map((row) => (row.eliminated ? { ...row, eliminated: { ...row.eliminated, afterPass: row.eliminated.afterPass + 1 } } : row)),
  };
  return { conclusion, ...(ranked && { best: ranked }), ...(search && { search }), ...(equivalence && { equivalence }), ...(accuracy && { accuracy }) };
}

/**
 * A stored run as the JSON views give it (`show --json`, `ls --json`): a search run has no baseline, so its config
 * names none (the stored `baseline` is the file loader's placeholder, the space's first point) and it carries no
 * verdicts against one (finalize stores them all the same); the views carry the search's answer and its decisions
 * per point (`search`: leaders with each level's `best`, `table`) instead.
 */
export function runJson(run: RunDetail): Omit<RunDetail, 'config'> & { config: Omit<RunDetail['config'], 'baseline'> & { baseline?: string } } {
  if (run.config.search === undefined) return run;
  const { verdicts: _verdicts, config, ...rest } = run;
  const { baseline: _baseline, ...searchConfig } = config;
  return { ...rest, config: searchConfig };
}

/** What `servelab export` writes: a run's readable trials and, for request-level formats, their requests. */
export interface ExportData {
  run: RunDetail;
  trials: TrialRecord[];
  /** Requests per trial id; empty when not asked for. */
  samples: Map<number, RequestSample[]>;
  /** Stored values left out (each also warned on stderr). */
  unreadable: UnreadableRow[];
}

export function loadExportData(db: Db, runId: number, options: { samples: boolean }): ExportData | undefined {
  const run = getRun(db, runId);
  if (!run) return undefined;
  const unreadable: UnreadableRow[] = [];
  const trials = listTrials(db, runId, unreadable);
  const samples = new Map(options.samples ? trials.map((trial) => [trial.id, trialSamples(db, trial.id, unreadable)]) : []);
  return { run, trials, samples, unreadable };
}
