/**
 * servelab as a library: the typed building blocks the CLI is made of. Everything here is stable API; deeper
 * paths are internal and may change.
 */

// Servers: launch (own process group, log teed, readiness-gated) and wait for one started elsewhere.
export { launchServer } from './launch/launch.js';
export type { LaunchHooks, RunningServer, ServerSpec } from './launch/types.js';
export { waitForReady, type WaitOptions } from './ready/wait.js';
export type { NotReadyKind, PhaseTiming, ReadyProgress, ReadyResult } from './ready/types.js';
export { NotReadyError } from './ready/errors.js';
export { BUILTIN_PROFILES } from './profiles/builtin.js';
export { inferProfileName, loadUserProfiles, resolveProfile } from './profiles/user.js';
export type { BackendKind, ServerProfile } from './profiles/types.js';

// Load: one benchmark (single stream, concurrency levels, request rates) against a ready server.
export { runBenchmark } from './load/run.js';
export type { BenchOptions, BenchResult, LevelResult, RequestSample, Slo, Summary, Workload } from './load/types.js';

// Experiments: load a file, run (or resume) it into a store.
export { loadExperiment, runExperiment, type RunOptions, type RunOutcome } from './experiment/index.js';
export type { MetricName, ResolvedExperiment, VariantVerdict } from './experiment/types.js';

// Store reads.
export { defaultStorePath, openStore, type Db } from './store/db.js';
export { getFingerprint, getRun, listRuns, listTrials, trialSamples, type RunDetail } from './store/queries.js';
export type { FingerprintRecord, RunRecord, RunStatus, TrialMetrics, TrialRecord } from './store/types.js';
export type { Fingerprint, FingerprintChange } from './fingerprint/types.js';

// Reports: self-contained HTML + Markdown for stored runs.
export { writeReports, type WrittenReport } from './report/write.js';

// The built-in simulator, for trying all of the above without a GPU.
export { startSimulator, type SimulatorHandle, type SimulatorOptions } from './simulate/index.js';

export { isUserError, UserError } from './util/errors.js';
export { VERSION } from './version.js';
