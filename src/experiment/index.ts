/** Public API of the experiment runner (see /work/notes/experiment-api.md). */
export { loadExperiment, resolveExperiment, serverKeyOf, workloadLabel } from './load.js';
export { planExperiment, serverKeysOf, countRestarts } from './plan.js';
export { createRun, loadRun, planFor, trialKey } from './run-store.js';
export { runExperiment, type RunOptions } from './runner.js';
export { finalizeRun, computeVerdicts, type RunOutcome } from './finalize.js';
export type * from './types.js';
