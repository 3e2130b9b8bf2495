import { Agent, request } from 'undici';
import { parsePrometheusTotals } from '../metrics/prometheus.js';
import type { ServerMetricSeries, ServerMetrics } from './types.js';

/** Engine metric families worth a time series: vLLM, SGLang, llama.cpp, TGI. Histogram parts are left out (too many). */
const ENGINE_METRIC = /^(vllm:|sglang:|llamacpp:|tgi_)/;
const HISTOGRAM_PART = /_(bucket|sum|count|created)$/;
/** Bounds a server that exposes hundreds of families: the first ones in exposition order are kept. */
const MAX_SERIES = 48;

/** The engine metrics of one scrape (labels summed per name, like parsePrometheusTotals). Pure. */
export function selectEngineMetrics(text: string): Map<string, number> {
  const selected = new Map<string, number>();
  for (const [name, value] of parsePrometheusTotals(text)) {
    if (selected.size >= MAX_SERIES) break;
    if (ENGINE_METRIC.test(name) && !HISTOGRAM_PART.test(name)) selected.set(name, value);
  }
  return selected;
}

export interface Scraper {
  stop(): Promise<ServerMetrics>;
}

/**
 * Scrape `<baseUrl>/metrics` every interval until stopped. A server without the endpoint (404, not Prometheus
 * text) gives up after the first scrape with the reason; a failed scrape later leaves a gap, never an error.
 */
export function startScraper(baseUrl: string, options: { intervalMs: number; timeoutMs?: number }): Scraper {
  const dispatcher = new Agent({ connections: 1 });
  const timeoutMs = options.timeoutMs ?? 2_000;
  const startedAt = Date.now();
  const series = new Map<string, ServerMetricSeries>();
  const result: ServerMetrics = { series: [] };
  let scrapes = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();

  const scrape = async (): Promise<void> => {
    const text = await fetchMetrics(dispatcher, `${baseUrl}/metrics`, timeoutMs);
    const at = Date.now() - startedAt;
    scrapes += 1;
    if (typeof text !== 'string') {
      if (scrapes === 1) result.unavailable = text.reason;
      return;
    }
    const metrics = selectEngineMetrics(text);
    if (scrapes === 1 && metrics.size === 0) {
      result.unavailable = 'no vllm:/sglang:/llamacpp:/tgi_ metrics at /metrics';
      return;
    }
    for (const [name, value] of metrics) {
      const line = series.get(name) ?? { name, points: [] };
      line.points.push([at, value]);
      series.set(name, line);
    }
  };
  const tick = (): void => {
    inFlight = scrape().then(() => {
      if (!stopped && result.unavailable === undefined) timer = setTimeout(tick, options.intervalMs);
    });
  };
  tick();

  return {
    async stop(): Promise<ServerMetrics> {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inFlight;
      await dispatcher.close();
      result.series = [...series.values()];
      return result;
    },
  };
}

async function fetchMetrics(dispatcher: Agent, url: string, timeoutMs: number): Promise<string | { reason: string }> {
  try {
    const response = await request(url, { dispatcher, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const text = await response.body.text();
    return response.statusCode === 200 ? text : { reason: `/metrics answered HTTP ${response.statusCode}` };
  } catch (error) {
    return { reason: `/metrics unreachable: ${(error as Error).message}` };
  }
}
