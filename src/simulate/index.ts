/** Public API of the built-in simulator: start it (in-process or as a child), configure it, derive expectations. */

export { type ProcessExit, SERVELAB_BIN, type SimulatorProcess, spawnSimulator } from './child.js';
export { parseSimConfig, resolveSimConfig, type SimConfig, type SimConfigInput, SimConfigSchema } from './config.js';
export {
  batchFactor,
  envSpeedup,
  expectedAcceptanceRate,
  expectedE2eMs,
  expectedStepMs,
  expectedTokensPerStep,
  expectedTpotMs,
  expectedTtftMs,
} from './model.js';
export { type SimulatorHandle, type SimulatorOptions, startSimulator } from './server.js';
export type { ServerState } from './startup.js';
export { countTokens } from './text.js';
