/**
 * Defaults shared by every command and the experiment file, so `wait`, `launch`, `run` and `bench` agree.
 */

/**
 * How long a server may take to become ready. Large models take 10–20 minutes to load weights and capture CUDA
 * graphs; 30 minutes leaves headroom for a cold cache, while a hung startup still fails within the hour.
 */
export const DEFAULT_READY_TIMEOUT = '30m';
export const DEFAULT_READY_TIMEOUT_MS = 30 * 60_000;

/** A request that has produced nothing for this long is failed as a stall. */
export const DEFAULT_REQUEST_TIMEOUT = '60s';
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

/**
 * Most of its prompt tokens a `cache: cold` trial may find in the prefix cache. Above it the trial measured a cache
 * it should not have had (a salt that did not reach the prompt, a carried-over cache) and is invalid. Not 0: prompts
 * of one trial share their salt words and a dataset's common openings, a few blocks' worth.
 */
export const COLD_CACHE_MAX_HIT_RATE = 0.05;

/**
 * Prompt tokens a cold trial's first request may find cached on top of that share: what no salt removes or what the
 * trial itself left — the BOS token and a chat template's head, and the salt's opening words, which the trial's own
 * warm-up sent just before (4 words, up to 2 tokens each). A real llama-server cached 5 of a 37-token first request
 * (BOS + the 4 salt words: 14%), which the 5% alone called a warm cache.
 */
export const COLD_CACHE_OPENING_TOKENS = 16;

/** Requests in flight at most under an open-loop rate (`bench --max-in-flight`, a rate workload's `maxInFlight`). */
export const DEFAULT_MAX_IN_FLIGHT = 256;

/** Requests before each quality.equivalence pass, not compared: a cold server's first request (compilation, caches). */
export const EQUIVALENCE_WARMUP_REQUESTS = 1;

/** Warm-up requests before measuring, excluded from results (`bench --warmup`, `client.warmup.requests`). */
export const DEFAULT_WARMUP_REQUESTS = 1;

/**
 * `client.warmup.perWorkload`: each workload (each level of a sweep) warmed at its own concurrency or rate before its
 * first trial after a server start. On: in examples/sim-spec-decode.yaml with a new-batch-size cost, one request at
 * c=1 left the first c=8 trial after each start slower than the later ones; per workload removed it (docs/experiments.md).
 */
export const DEFAULT_WARMUP_PER_WORKLOAD = true;

/** Synthetic prompt and output lengths in tokens (`bench --input-len/--output-len`, a synthetic `client.prompts`). */
export const DEFAULT_INPUT_TOKENS = 256;
export const DEFAULT_SYNTHETIC_OUTPUT_TOKENS = 128;

/** Seed of synthetic prompts, dataset order and Poisson arrivals (`bench --seed`, `client.prompts.seed`). */
export const DEFAULT_PROMPT_SEED = 0;

/** Fraction of requests that may fail with the measurement still counting (`bench --max-failed-fraction`, `maxFailedFraction`). */
export const DEFAULT_MAX_FAILED_FRACTION = 0;

/** Load-generation threads (`bench --workers`, `client.workers`): this thread only. */
export const DEFAULT_LOAD_WORKERS = 1;

/** Bisection steps of a capacity search (`bench --steps`, a capacity workload's `steps`): ~1/64 of the range's ratio. */
export const DEFAULT_CAPACITY_STEPS = 6;
/** Shared-prefix prompts (`client.prompts` kind shared-prefix, `bench --shared-prefixes`): document, questions, question length. */
export const DEFAULT_PREFIX_TOKENS = 1024;
export const DEFAULT_QUESTIONS_PER_PREFIX = 16;
export const DEFAULT_QUESTION_TOKENS = 64;

/** Wait between a session's turns (`bench --think-time`, a sessions `client.prompts.thinkTime`): none. */
export const DEFAULT_THINK_TIME = '0s';

/**
 * Tokens (prompt + output) one request of a trace, dataset or accuracy set may ask for when the model's context is
 * not given (`client.contextTokens`, `bench --context-tokens`): 2^20, the longest context the servers commonly run.
 * Past it an input line is far more likely a mistake than a request (a trace's `input_length: 1000000000` would
 * exhaust the load client's memory building its prompt), so it is refused before any server starts.
 */
export const MAX_REQUEST_TOKENS = 1_048_576;
