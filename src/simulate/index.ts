/** Public API of the built-in simulator: start it (in-process or as a child), configure it, derive expectations. */
export { startSimulator, type SimulatorHandle, type SimulatorOptions } from './server.js';
export { spawnSimulator, SERVELAB_BIN, type SimulatorProcess, type ProcessExit } from './child.js';
export { parseSimConfig, resolveSimConfig, SimConfigSchema, type SimConfig, type SimConfigInput } from './config.js';
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
export { countTokens } from './text.js';
export type { ServerState } from './startup.js';
