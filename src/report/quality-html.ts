/** The quality checks of a run as HTML (output equivalence, accuracy), read from the store: the dashboard's run view. */
import { experimentAccuracy } from '../experiment/analysis/accuracy.js';
import { experimentEquivalence } from '../experiment/analysis/equivalence.js';
import type { ResolvedExperiment } from '../experiment/spec/types.js';
import { listAccuracyPasses } from '../store/accuracy.js';
import type { Db } from '../store/db.js';
import { listEquivalencePasses } from '../store/equivalence.js';
import { accuracyHtml } from './accuracy-html.js';
import { equivalenceHtml } from './equivalence-html.js';

/** Empty when the experiment asks for no quality check. */
export function storedQualityHtml(db: Db, runId: number, experiment: ResolvedExperiment): string {
  const equivalence = experimentEquivalence(experiment, listEquivalencePasses(db, runId));
  const accuracy = experimentAccuracy(experiment, listAccuracyPasses(db, runId));
  return (equivalence ? equivalenceHtml(equivalence) : '') + (accuracy ? accuracyHtml(accuracy) : '');
}
