import type { Db } from '../../store/db.js';
import { listTrials, trialHealth } from '../../store/queries.js';
import { setRunStatus, setRunVerdicts } from '../../store/runs.js';
import { slotKey } from '../../util/trial-keys.js';
import { measuredOnly } from '../analysis/search.js';
import { computeVerdicts } from '../analysis/verdicts.js';
import { skippedTrialFilter } from './campaign.js';
import type { Fence } from './journal.js';
import { loadRun, type RunOutcome } from './run-store.js';

/**
 * Close a run once every planned trial is stored: verdicts into runs.verdict_json (none for a search), status 'done'. A run with
 * trials still missing keeps its status (a Slurm job still running, or a crash to resume). A runner passes its
 * journal's fence, so it writes the verdicts only while the run is still its own.
 */
export function finalizeRun(db: Db, runId: number, fence: Fence = (write) => db.transaction(write)()): RunOutcome {
  const { run, experiment, plan } = loadRun(db, runId);
  const trials = listTrials(db, runId);
  const stored = new Set(trials.map(slotKey));
  // A campaign's eliminated configs and early stop leave planned trials unmeasured on purpose.
  const skipped = skippedTrialFilter(db, runId);
  const missing = plan.trials.filter((trial) => !stored.has(slotKey(trial)) && !skipped(trial)).length;
  if (missing > 0) {
    return { runId, status: run.status, message: `${missing} of ${plan.trials.length} planned trials not measured yet` };
  }
  // A search has no baseline (its first point is only the loader's placeholder): its answer is the strategy's steps.
  const verdicts = experiment.search ? [] : computeVerdicts(measuredOnly(experiment, trials), trials, trialHealth(db, runId), plan.schedule === 'blocked');
  fence(() => {
    setRunVerdicts(db, runId, verdicts);
    setRunStatus(db, runId, 'done');
  });
  return { runId, status: 'done', verdicts };
}
