import { request } from 'undici';
import { messageOf } from '../util/errors.js';

/** Probe cadence: a refused connection is seen within about two intervals. */
const PROBE_INTERVAL_MS = 250;
/** Two refusals in a row: one can be a transient accept-queue overflow under heavy load. */
const REFUSALS_TO_DEAD = 2;
/** A server that answers nothing at all for this long is hung (or its forward is). */
const UNANSWERED_MS = 3_000;
const PROBE_TIMEOUT_MS = 1_000;
/** How long a refusal waits for the process exit that usually explains it. */
const EXIT_GRACE_MS = 200;
/**
 * An engine whose HTTP server outlives its scheduler (SGLang, sglang#6624) is asked a scheduler round trip this
 * often, which waits for the scheduler's next loop (between forward passes): rare enough to cost nothing measurable.
 */
const SCHEDULER_INTERVAL_MS = 2_000;
/** No scheduler answer for this long is a dead or wedged scheduler: longer than a chunked prefill's forward pass. */
const SCHEDULER_UNANSWERED_MS = 15_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface LivenessOptions {
  baseUrl: string;
  /** Probed with GET; any HTTP answer counts as alive (a 404 still proves the process serves). */
  path: string;
  /**
   * GET paths whose answer needs the engine's scheduler (the profile's `schedulerPaths`), the current name first and
   * older names after it: a 404 moves on to the next. None: the HTTP probe alone.
   */
  schedulerPaths?: readonly string[];
  /** How long the scheduler may leave its probe unanswered (default 15 s). */
  schedulerUnansweredMs?: number;
  /** Resolves when the server process ended (local and SSH launches know this); describes how. */
  exited?: Promise<string>;
  /** Called once, with the cause, when the server is declared dead. */
  onDead?: (cause: string) => void;
}

export interface LivenessWatch {
  /** Aborts when the server died or stopped answering: pass it to the load client so nothing is fired into it. */
  readonly signal: AbortSignal;
  /** Why the server was declared dead; undefined while it is alive. */
  cause(): string | undefined;
  /** Probe now (a request was just refused): one more refusal is proof enough. Resolves once decided. */
  verify(): Promise<void>;
  stop(): void;
}

/**
 * Watch a server while it is measured: its exit (immediate) and, for servers known only by URL or behind a
 * forward, a light HTTP probe that catches a killed process, a dropped SSH forward or a hung server.
 */
export function watchLiveness(options: LivenessOptions): LivenessWatch {
  const controller = new AbortController();
  let cause: string | undefined;
  let stopped = false;
  const declare = (why: string): void => {
    if (cause !== undefined || stopped) return;
    cause = why;
    controller.abort(new Error(why));
    options.onDead?.(why);
  };
  void options.exited?.then(declare);
  // A refused connection often comes a moment before the exit event: wait briefly for it, so the cause can say
  // "killed by SIGKILL" rather than only "stopped accepting connections".
  const declareRefused = async (outcome: string): Promise<void> => {
    const exit = options.exited && (await Promise.race([options.exited, sleep(EXIT_GRACE_MS).then(() => undefined)]));
    declare(exit ?? `server stopped accepting connections (${outcome})`);
  };

  const url = `${options.baseUrl.replace(/\/+$/, '')}${options.path}`;
  /**
   * The scheduler's round trip, apart from the HTTP probe: an answer of any status but 404 proves it ran; a 404 is a
   * name this version lacks (the next is tried); no answer within the limit is a dead scheduler behind a live server.
   */
  const watchScheduler = async (baseUrl: string, paths: readonly string[], unansweredMs: number): Promise<void> => {
    const remaining = [...paths];
    let lastAnswerAt = Date.now();
    while (!stopped && cause === undefined && remaining.length > 0) {
      const path = remaining[0]!;
      const outcome = await probeStatus(`${baseUrl.replace(/\/+$/, '')}${path}`, unansweredMs);
      if (stopped) return;
      if (outcome === 404) {
        remaining.shift();
        continue;
      }
      if (typeof outcome === 'number') lastAnswerAt = Date.now();
      if (Date.now() - lastAnswerAt >= unansweredMs) {
        declare(`the server answers HTTP but its scheduler has not answered ${path} for ${Math.round(unansweredMs / 1000)} s (dead or wedged)`);
      }
      await new Promise((resolve) => setTimeout(resolve, SCHEDULER_INTERVAL_MS).unref());
    }
  };
  let refusals = 0;
  let lastAnswerAt = Date.now();
  const probe = async (): Promise<void> => {
    while (!stopped && cause === undefined) {
      const outcome = await probeOnce(url);
      if (stopped) return;
      if (outcome === 'answered') {
        refusals = 0;
        lastAnswerAt = Date.now();
      } else if (outcome !== 'timeout') {
        refusals += 1;
        if (refusals >= REFUSALS_TO_DEAD) await declareRefused(outcome);
      }
      if (Date.now() - lastAnswerAt >= UNANSWERED_MS) declare(`server answered nothing for ${UNANSWERED_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS).unref());
    }
  };
  void probe();
  if (options.schedulerPaths?.length) void watchScheduler(options.baseUrl, options.schedulerPaths, options.schedulerUnansweredMs ?? SCHEDULER_UNANSWERED_MS);
  return {
    signal: controller.signal,
    cause: () => cause,
    verify: async () => {
      if (cause !== undefined || stopped) return;
      const outcome = await probeOnce(url);
      if (outcome !== 'answered' && outcome !== 'timeout') await declareRefused(outcome);
    },
    stop: () => {
      stopped = true;
    },
  };
}

/**
 * Poll until the server answers (true), its process ends, `timeoutMs` passes or `signal` aborts (false). Used after
 * an invalid trial: an SSH forward comes back once the connection is re-established.
 */
export async function waitUntilAnswering(options: {
  baseUrl: string;
  path: string;
  timeoutMs: number;
  exited?: Promise<unknown>;
  signal?: AbortSignal;
}): Promise<boolean> {
  let ended = false;
  void options.exited?.then(() => (ended = true));
  const url = `${options.baseUrl.replace(/\/+$/, '')}${options.path}`;
  const until = Date.now() + options.timeoutMs;
  while (!ended && !options.signal?.aborted && Date.now() < until) {
    if ((await probeOnce(url)) === 'answered') return !ended;
    // Not unref'd: this wait may be the only thing the process is doing.
    await sleep(2 * PROBE_INTERVAL_MS);
  }
  return false;
}

/** 'answered', 'timeout', or the connection error. */
async function probeOnce(url: string): Promise<string> {
  const outcome = await probeStatus(url, PROBE_TIMEOUT_MS);
  return typeof outcome === 'number' ? 'answered' : outcome;
}

/** The HTTP status, 'timeout', or the connection error. */
async function probeStatus(url: string, timeoutMs: number): Promise<number | string> {
  try {
    const response = await request(url, {
      // A fresh connection each time: a server that closes kept-alive sockets must not look dead.
      reset: true,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body.dump();
    return response.statusCode;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (/TIMEOUT|ABORT/i.test(code) || (error as Error).name === 'TimeoutError' || (error as Error).name === 'AbortError') return 'timeout';
    return messageOf(error);
  }
}

/** "exited with code 1" / "was killed by SIGKILL" for a server's ExitInfo. */
export function describeExit(info: { code: number | null; signal: string | null }): string {
  if (info.signal) return `server was killed by ${info.signal}`;
  if (info.code !== null) return `server exited with code ${info.code}`;
  return 'server is gone (its host stopped answering)';
}
