import type { CommandRunner } from '../fingerprint/types.js';
import { startSampler } from './sampler.js';
import { startScraper } from './scrape.js';
import { summarizeTelemetry } from './summary.js';
import type { TrialTelemetry } from './types.js';

/** `telemetry:` of an experiment file, resolved. */
export interface TelemetryConfig {
  enabled: boolean;
  intervalMs: number;
  serverMetrics: boolean;
}

export const DEFAULT_TELEMETRY: TelemetryConfig = { enabled: true, intervalMs: 1000, serverMetrics: true };

export interface TrialRecorder {
  /** Stop both recorders and return what they saw (undefined when telemetry is off). Safe to call more than once. */
  stop(): Promise<TrialTelemetry | undefined>;
}

/**
 * Record the machine (GPU/host, on the executor's host) and the server's /metrics while a trial runs. Started just
 * before the load and stopped just after it, so the series cover exactly the measured window.
 */
export function startTrialRecorder(
  runner: CommandRunner & { readonly kind?: string },
  baseUrl: string,
  config: TelemetryConfig = DEFAULT_TELEMETRY,
): TrialRecorder {
  if (!config.enabled) return { stop: () => Promise.resolve(undefined) };
  const startedAt = Date.now();
  const sampler = startSampler(runner, { intervalMs: config.intervalMs, local: runner.kind === 'local' });
  const scraper = config.serverMetrics ? startScraper(baseUrl, { intervalMs: config.intervalMs }) : undefined;
  let stopped: Promise<TrialTelemetry> | undefined;
  return {
    stop() {
      stopped ??= Promise.all([sampler.stop(), scraper?.stop()]).then(([series, serverMetrics]) => ({
        startedAt,
        summary: summarizeTelemetry(series),
        series,
        serverMetrics: serverMetrics ?? { unavailable: 'not scraped (telemetry.serverMetrics: false)', series: [] },
      }));
      return stopped;
    },
  };
}
