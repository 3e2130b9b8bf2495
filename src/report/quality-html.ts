/** The quality checks of a run's conclusion as HTML (output equivalence, accuracy): the dashboard's run view. */
import type { Conclusion } from '../experiment/analysis/conclusion.js';
import { accuracyHtml } from './accuracy-html.js';
import { equivalenceHtml } from './equivalence-html.js';

/** Empty when the experiment asks for no quality check (or no conclusion was loaded). */
export function qualityHtml(conclusion: Conclusion | undefined): string {
  const { equivalence, accuracy } = conclusion ?? {};
  return (equivalence ? equivalenceHtml(equivalence) : '') + (accuracy ? accuracyHtml(accuracy) : '');
}
