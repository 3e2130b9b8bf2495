/**
 * servelab as a library: the typed building blocks the CLI is made of. Everything here is stable API; deeper
 * paths are internal and may change.
 */

export { levelValidity, type ValidityOptions } from './experiment/analysis/trial-validity.js';
// Experiments: load a file, run (or resume) it into a store.
export { loadExperiment, type RunOptions, type RunOutcome, runExperiment } from './experiment/index.js';
export type { MetricName, ResolvedExperiment, VariantVerdict } from './experiment/spec/types.js';
export type { Fingerprint, FingerprintChange } from './fingerprint/types.js';
// Servers: launch (own process group, log teed, readiness-gated) and wait for one started elsewhere.
export { launchServer } from './launch/launch.js';
export type { LaunchHooks, RunningServer, ServerSpec } from './launch/types.js';
// Load: one benchmark (single stream, concurrency levels, request rates) against a ready server.
export { runBenchmark } from './load/run.js';
export type { BenchOptions, BenchResult, ClientOptions, LevelResult, RequestSample, Slo, Summary, TokenCountSource, Workload } from './load/types.js';
export { BUILTIN_PROFILES } from './profiles/builtin.js';
export type { BackendKind, ServerProfile } from './profiles/types.js';
export { inferProfileName, loadUserProfiles, resolveProfile } from './profiles/user.js';
export { NotReadyError } from './ready/errors.js';
export type { NotReadyKind, PhaseTiming, ReadyProgress, ReadyResult } from './ready/types.js';
export { type WaitOptions, waitForReady } from './ready/wait.js';
// Reports: self-contained HTML + Markdown for stored runs.
export { type WrittenReport, writeReports } from './report/write.js';
// The built-in simulator, for trying all of the above without a GPU.
export { type SimulatorHandle, type SimulatorOptions, startSimulator } from './simulate/index.js';
// Store reads.
export { type Db, defaultStorePath, openStore } from './store/db.js';
export { getFingerprint, getRun, listRuns, listTrials, type RunDetail, trialSamples } from './store/queries.js';
export type { FingerprintRecord, RunRecord, RunStatus, TrialMetrics, TrialRecord } from './store/types.js';

export { isUserError, UserError } from './util/errors.js';
export { VERSION } from './version.js';
