/** Public API of the experiment runner, used by the CLI and re-exported by the library API (src/index.ts). */

export { computeVerdicts, finalizeRun, type RunOutcome } from './finalize.js';
export { loadExperiment, resolveExperiment, serverKeyOf, workloadLabel } from './load.js';
export { countRestarts, planExperiment, serverKeysOf } from './plan.js';
export { createRun, loadRun, planFor, trialKey } from './run-store.js';
export { type RunOptions, runExperiment } from './runner.js';
export type * from './types.js';
