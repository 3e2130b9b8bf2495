import type { RunningServer } from '../../launch/types.js';
import { trialLevelOf } from '../../load/capacity.js';
import { describeExit, watchLiveness } from '../../load/liveness.js';
import type { BenchOptions, BenchProgress, LevelResult } from '../../load/types.js';
import { WARMUP_LABEL } from '../../load/warmup.js';
import { targetHitRate } from '../../metrics/workload-shape.js';
import type { ServerProfile } from '../../profiles/types.js';
import { prefixCacheFromCounters } from '../../telemetry/prefix-cache.js';
import { startTrialRecorder } from '../../telemetry/trial.js';
import type { TrialTelemetry } from '../../telemetry/types.js';
import { DEFAULT_MAX_FAILED_FRACTION } from '../../util/defaults.js';
import type { PlannedTrial, ResolvedVariant, ResolvedWorkload, WarmupConfig } from '../spec/types.js';
import { resetCache, type TrialCache, trialCache } from './cache.js';
import type { RunContext } from './context.js';
import { watchServerLog } from './log-watch.js';
import type { ServerHandle } from './server-lifecycle.js';
import { invalidReason } from './validity.js';

/** One measurement of a planned trial, valid or not: what every trial consumer (store, log, drift watch) gets. */
export interface MeasuredTrial {
  trial: PlannedTrial;
  variant: ResolvedVariant;
  workload: ResolvedWorkload;
  /** 0 for the first measurement of this planned trial, 1 for its first re-run... */
  attempt: number;
  /** 1 for the variant's first trial of this workload after its server started, 2 for the next… */
  afterStart: number;
  startedAt: string;
  finishedAt: string;
  /** Undefined when the load client measured nothing. */
  level?: LevelResult;
  telemetry?: TrialTelemetry;
  /** How the trial met the prefix cache, as stored ("cold (salt N)"). */
  cache: string;
  /** Why it may not count (validity.ts); undefined for a valid trial. */
  invalid?: string;
}

/** The progress of the trial's load, with whether it is still warming up. */
export type TrialProgress = (progress: BenchProgress, warmingUp: boolean) => void;

/**
 * Measure one planned trial while watching the server: reset or salt the prefix cache, record telemetry, run the
 * load, judge validity. Writes nothing: the caller hands the result to the trial consumers. Throws the run's abort
 * reason when it stopped (Ctrl-C, lease lost): a trial cut short is not a trial, it is measured again on resume.
 */
export async function measureTrial(
  context: RunContext,
  handle: Pick<ServerHandle, 'running' | 'profile'>,
  planned: { trial: PlannedTrial; variant: ResolvedVariant; attempt: number; afterStart: number },
  onProgress: TrialProgress,
): Promise<MeasuredTrial> {
  const { experiment, signal: stop } = context;
  const { trial, variant } = planned;
  const workload = experiment.workloads.find((candidate) => candidate.label === trial.workload)!;
  const { running: server, profile } = handle;
  const sharedIndex = experiment.variants.filter((other) => other.serverKey === variant.serverKey).indexOf(variant);
  const cache = trialCache(variant.client.cache, profile, {
    runId: context.runId,
    block: trial.block,
    workload: experiment.workloads.indexOf(workload),
    repetition: trial.repetition,
    sharedIndex,
    attempt: planned.attempt,
  });
  if (cache.resetPath) await resetCache(server.baseUrl, cache.resetPath);
  const startedAt = new Date().toISOString();
  // Nothing is fired into a dead server: its death aborts the load client within a second.
  const liveness = watchLiveness({
    baseUrl: server.baseUrl,
    path: profile.livenessPath ?? profile.healthPath,
    ...(profile.schedulerPaths && { schedulerPaths: profile.schedulerPaths }),
    exited: server.exited.then(describeExit),
  });
  // Nor into one that logged a fatal error (a CUDA error, an NCCL failure) while it still answers.
  const serverLog = watchServerLog(server.logPath, profile, context.log);
  const signal = AbortSignal.any([stop, liveness.signal, serverLog.signal]);
  let level: LevelResult | undefined;
  const recorder = startTrialRecorder(context.executor, server.baseUrl, experiment.telemetry);
  try {
    const result = await context.executor.bench({
      ...benchOptionsOf(variant, workload, profile, server, cache, planned.afterStart),
      // The level stops firing once it can no longer be valid, instead of sending the rest into a broken server.
      maxFailedFraction: experiment.validity?.maxFailedFraction ?? DEFAULT_MAX_FAILED_FRACTION,
      signal,
      verifyServer: liveness.verify,
      onProgress: (progress) => onProgress(progress, progress.levelLabel === WARMUP_LABEL),
    });
    level = trialLevelOf(result.levels);
  } catch (error) {
    // A load client that failed because the server went away (e.g. unreachable at the start) measured an invalid
    // trial; check at once rather than waiting for the next probe.
    stop.throwIfAborted();
    await liveness.verify();
    if (liveness.cause() === undefined && !serverLog.signal.aborted) throw error;
  } finally {
    liveness.stop();
    void serverLog.stop();
    // Also when the load client threw: the sampler is a child process. stop() is idempotent.
    void recorder.stop();
  }
  const telemetry = await recorder.stop();
  const loggedFatal = await serverLog.stop();
  stop.throwIfAborted();
  const counted = level && !level.prefixCache && telemetry ? prefixCacheFromCounters(telemetry.serverMetrics.series) : undefined;
  // The counters cannot be split per request; the designed rate comes from the level's own requests.
  const target = level && counted ? targetHitRate(level.samples) : undefined;
  if (level && counted) level = { ...level, prefixCache: { ...counted, ...(target !== undefined && { targetHitRate: target }) } };
  const died = liveness.cause();
  const invalid = invalidReason(level, {
    maxFailedFraction: experiment.validity?.maxFailedFraction ?? DEFAULT_MAX_FAILED_FRACTION,
    ignoreEos: variant.client.ignoreEos,
    ...(variant.client.requireFullOutput !== undefined && { requireFullOutput: variant.client.requireFullOutput }),
    ...(died !== undefined && { serverDeath: died }),
    ...(variant.client.cache !== 'warm' && { coldCache: variant.client.cache }),
    ...(loggedFatal && { loggedFatal }),
  });
  return {
    ...planned,
    workload,
    startedAt,
    finishedAt: new Date().toISOString(),
    ...(level && { level }),
    ...(telemetry && { telemetry }),
    cache: cache.record,
    ...(invalid !== undefined && { invalid }),
  };
}

/**
 * The load client's options for a trial: the variant's client config on this server, workload and cache mode.
 * `afterStart` (see MeasuredTrial): with `warmup.perWorkload`, only the first trial after a start is warmed, level
 * by level at the workload's own concurrency; the server stays warm for the later ones.
 */
export function benchOptionsOf(
  variant: ResolvedVariant,
  workload: ResolvedWorkload,
  profile: ServerProfile,
  server: RunningServer,
  cache: TrialCache,
  afterStart = 1,
): Omit<BenchOptions, 'signal' | 'onProgress' | 'verifyServer'> {
  const client = variant.client;
  const model = client.model ?? server.ready.model;
  return {
    baseUrl: server.baseUrl,
    backend: client.backend ?? profile.defaultBackend,
    ...(model !== undefined && { model }),
    workload: workload.workload,
    prompts: workload.prompts ?? client.prompts,
    ...(cache.promptSalt !== undefined && { promptSalt: cache.promptSalt }),
    ...(cache.cachePrompt === false && { cachePrompt: false }),
    ...(profile.closesStreamedConnections && { keepAlive: false as const }),
    ...warmupOptionsOf(client.warmup, afterStart),
    ignoreEos: client.ignoreEos,
    requestTimeoutMs: client.requestTimeoutMs,
    requestTimeoutSetting: 'client.requestTimeout',
    ...(client.requireFullOutput !== undefined && { requireFullOutput: client.requireFullOutput }),
    ...(client.tokenCounts !== undefined && { tokenCounts: client.tokenCounts }),
    ...(client.slo && { slo: client.slo }),
    ...(client.tokenizerPath !== undefined && { tokenizerPath: client.tokenizerPath }),
    ...(client.contextTokens !== undefined && { contextTokens: client.contextTokens }),
    ...(client.workers !== undefined && { workers: client.workers }),
    specMetrics: 'auto',
  };
}

function warmupOptionsOf(warmup: WarmupConfig, afterStart: number): Pick<BenchOptions, 'warmupRequests' | 'warmupMs' | 'warmupPerLevel'> {
  if (warmup.perWorkload && afterStart > 1) return { warmupRequests: 0, warmupPerLevel: true };
  return {
    warmupRequests: warmup.requests,
    ...(warmup.durationMs !== undefined && { warmupMs: warmup.durationMs }),
    warmupPerLevel: warmup.perWorkload,
  };
}
