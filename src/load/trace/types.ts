/** Production trace formats `servelab bench --trace` replays (see ./parse.ts for each one's source and fields). */
export const TRACE_FORMATS = ['mooncake', 'burstgpt', 'azure'] as const;
export type TraceFormat = (typeof TRACE_FORMATS)[number];

/** Prompts (and, with a trace workload, arrival times) from a production trace file. */
export interface TraceSource {
  kind: 'trace';
  path: string;
  format: TraceFormat;
  /** Arrivals come this many times faster than recorded (0.5: twice as slow). Default 1. */
  speedup?: number;
  /** The stretch replayed, in ms of trace time from its first request: [startMs, endMs). Default: all of it. */
  window?: { startMs: number; endMs?: number };
  /** Seed of the words of each prompt block (a hash id's text is the same for every request that shares it). */
  seed?: number;
  /** Cap on each request's output tokens. */
  maxOutputTokens?: number;
}

/** One request of a trace, as recorded. */
export interface TraceRecord {
  /** Where it is, for error messages ("file:12"). */
  where: string;
  timestampMs: number;
  inputTokens: number;
  /** 0 in BurstGPT's failed requests. */
  outputTokens: number;
  /** Mooncake: ids of the prompt's 512-token blocks; a block id shared by two requests is a shared prompt prefix block. */
  hashIds?: number[];
}
