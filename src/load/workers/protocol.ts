import type { BackendKind } from '../../profiles/types.js';
import type { BackendRequestOptions } from '../backends.js';
import type { PromptItem } from '../prompts.js';
import type { RequestOutcome } from '../request.js';
import type { TokenCountSource } from '../types.js';

/** What a load worker needs to build its own connection pool and request context. */
export interface WorkerSetup {
  origin: string;
  pathPrefix: string;
  backend: BackendKind;
  /** The same request options as the main thread's, so no field is dropped on the way to a worker. */
  backendOptions: BackendRequestOptions;
  requestTimeoutMs: number;
  requestTimeoutSetting?: string;
  tokenCounts?: TokenCountSource;
  keepAlive?: false;
  tokenizerPath?: string;
  connections: number;
  /** bench/client-overhead: attach each request's timing errors against the simulator's send times to its outcome. */
  groundTruth?: boolean;
}

/** One worker's share of a level; indices are the level's, so merged samples keep their order. */
export interface WorkerLevel {
  type: 'level';
  items: Array<{ index: number; item: PromptItem; dueAtMs?: number }>;
  /** Closed loop: streams of this worker. Open loop: in-flight cap of this worker (dueAtMs set on every item). */
  concurrency: number;
  openLoop: boolean;
  /** Start time on the shared clock (performance.timeOrigin + performance.now(), ms). */
  startAt: number;
}

export type MainMessage = WorkerLevel | { type: 'abort' } | { type: 'close' };

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'outcomes'; outcomes: RequestOutcome[] }
  | { type: 'finished'; sent: number; endAt: number }
  | { type: 'error'; message: string };

/** One clock for every thread: each thread's timeOrigin plus its own monotonic now. */
export function sharedNow(): number {
  return performance.timeOrigin + performance.now();
}
