/** Public API of the experiment runner, used by the CLI and re-exported by the library API (src/index.ts). */

export { computeVerdicts } from './analysis/verdicts.js';
export { countRestarts, planExperiment, serverKeysOf } from './plan/plan.js';
export { finalizeRun } from './run/finalize.js';
export { createRun, loadRun, planFor, type RunOutcome } from './run/run-store.js';
export { type RunOptions, runExperiment } from './run/runner.js';
export { loadExperiment, resolveExperiment, serverKeyOf, workloadLabel } from './spec/load.js';
export type * from './spec/types.js';
