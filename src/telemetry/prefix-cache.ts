import type { PrefixCacheCheck } from '../metrics/types.js';
import type { ServerMetricSeries } from './types.js';

/** vLLM V1's prefix-cache counters (vllm/v1/metrics/loggers.py), in prompt tokens; exposed with the `_total` suffix. */
const QUERIES = 'vllm:prefix_cache_queries_total';
const HITS = 'vllm:prefix_cache_hits_total';

/**
 * A trial's prefix-cache hits from the server's counters scraped during it (last minus first reading), for servers
 * that say nothing per request (vLLM without --enable-prompt-tokens-details). The window is the recorder's, so
 * warm-up requests count too. Undefined without both counters or without a query in the window.
 */
export function prefixCacheFromCounters(series: readonly ServerMetricSeries[]): PrefixCacheCheck | undefined {
  const delta = (name: string): number | undefined => {
    const points = series.find((entry) => entry.name === name)?.points.filter(([, value]) => Number.isFinite(value));
    return points && points.length >= 2 ? points.at(-1)![1] - points[0]![1] : undefined;
  };
  const queries = delta(QUERIES);
  const hits = delta(HITS);
  if (queries === undefined || hits === undefined || queries <= 0) return undefined;
  return { hitRate: hits / queries, cachedTokens: hits, promptTokens: queries, reporting: 0, counters: 'vllm:prefix_cache_hits / _queries' };
}
