/** Public API of the experiment runner, used by the CLI and re-exported by the library API (src/index.ts). */
export { loadExperiment, resolveExperiment, serverKeyOf, workloadLabel } from './load.js';
export { planExperiment, serverKeysOf, countRestarts } from './plan.js';
export { createRun, loadRun, planFor, trialKey } from './run-store.js';
export { runExperiment, type RunOptions } from './runner.js';
export { finalizeRun, computeVerdicts, type RunOutcome } from './finalize.js';
export type * from './types.js';
