import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { type LevelPlan, type LevelRun, openSchedule } from '../level.js';
import type { PromptItem } from '../prompts.js';
import type { RequestOutcome } from '../request.js';
import { type MainMessage, sharedNow, type WorkerLevel, type WorkerMessage, type WorkerSetup } from './protocol.js';

/** Head start so every worker has its share before the common start time. */
const START_DELAY_MS = 50;

/** `workers: auto`: one thread per core, but never more threads than requests in flight. */
export function resolveWorkerCount(workers: number | 'auto', maxInFlight: number): number {
  const wanted = workers === 'auto' ? availableParallelism() : workers;
  return Math.max(1, Math.min(wanted, maxInFlight));
}

/** Split `total` into `parts` near-equal integers, the larger ones first. */
export function splitEvenly(total: number, parts: number): number[] {
  return Array.from({ length: parts }, (_, part) => Math.floor(total / parts) + (part < total % parts ? 1 : 0));
}

/**
 * Each worker's share of a level. Requests go round-robin by index; an open loop's arrival times are the ones a
 * single thread uses (the same seeded draws, or the trace's), so the offered load is the same schedule, only sent from
 * several threads. Workers given no stream (concurrency < workers) get no requests.
 */
export function partitionLevel(level: LevelPlan, prompts: readonly PromptItem[], seed: number, workers: number): Array<Omit<WorkerLevel, 'startAt'>> {
  const open = openSchedule(level, seed);
  const slots = splitEvenly(open ? open.maxInFlight : (level.concurrency ?? 1), workers);
  const active = slots.filter((slot) => slot > 0).length;
  const dueAt = open?.dueAt(prompts);
  return slots.map((slot, worker) => ({
    type: 'level' as const,
    concurrency: slot,
    openLoop: open !== undefined,
    items: slot === 0 ? [] : prompts.flatMap((item, index) => (index % active === worker ? [{ index, item, ...(dueAt && { dueAtMs: dueAt[index]! }) }] : [])),
  }));
}

/** N load-generation threads, kept for the whole benchmark (warm connection pools across levels). */
export class LoadWorkers {
  private constructor(private readonly workers: Worker[]) {}

  static async start(count: number, setup: Omit<WorkerSetup, 'connections'>, maxInFlight: number): Promise<LoadWorkers> {
    const connections = splitEvenly(maxInFlight, count);
    const workers = connections.map(
      (share) => new Worker(new URL('./worker.js', import.meta.url), { workerData: { ...setup, connections: Math.max(1, share) } satisfies WorkerSetup }),
    );
    try {
      await Promise.all(workers.map((worker) => nextMessage(worker, 'ready')));
    } catch (error) {
      await Promise.all(workers.map((worker) => worker.terminate()));
      throw error;
    }
    return new LoadWorkers(workers);
  }

  /**
   * Run one level across the workers; same result as runLevel: every outcome exactly once, sorted by index,
   * duration from the common start to the last worker's end on the shared clock.
   */
  async runLevel(
    level: LevelPlan,
    prompts: readonly PromptItem[],
    seed: number,
    onDone?: (outcome: RequestOutcome) => void,
    signal?: AbortSignal,
  ): Promise<LevelRun> {
    const shares = partitionLevel(level, prompts, seed, this.workers.length);
    const startAt = sharedNow() + START_DELAY_MS;
    const outcomes: RequestOutcome[] = [];
    const onAbort = () => this.broadcast({ type: 'abort' });
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const ends = await Promise.all(
        this.workers.map(
          (worker, index) =>
            new Promise<number>((resolve, reject) => {
              let received = 0;
              const onMessage = (message: WorkerMessage) => {
                if (message.type === 'outcomes') {
                  received += message.outcomes.length;
                  for (const outcome of message.outcomes) {
                    outcomes.push(outcome);
                    onDone?.(outcome);
                  }
                } else if (message.type === 'finished') {
                  cleanup();
                  if (received !== message.sent) reject(new Error(`load worker ${index} sent ${message.sent} requests but returned ${received} outcomes`));
                  else resolve(message.endAt);
                } else if (message.type === 'error') {
                  cleanup();
                  reject(new Error(`load worker ${index} failed: ${message.message}`));
                }
              };
              const onError = (error: Error) => {
                cleanup();
                reject(error);
              };
              const cleanup = () => {
                worker.off('message', onMessage);
                worker.off('error', onError);
              };
              worker.on('message', onMessage);
              worker.on('error', onError);
              worker.postMessage({ ...shares[index]!, startAt } satisfies MainMessage);
              if (signal?.aborted) worker.postMessage({ type: 'abort' } satisfies MainMessage);
            }),
        ),
      );
      outcomes.sort((a, b) => a.sample.index - b.sample.index);
      return { outcomes, durationS: Math.max(0, Math.max(...ends) - startAt) / 1000 };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async close(): Promise<void> {
    this.broadcast({ type: 'close' });
    await Promise.all(
      this.workers.map((worker) => new Promise<void>((resolve) => (worker.threadId === -1 ? resolve() : worker.once('exit', () => resolve())))),
    );
  }

  private broadcast(message: MainMessage): void {
    for (const worker of this.workers) worker.postMessage(message);
  }
}

function nextMessage(worker: Worker, type: WorkerMessage['type']): Promise<void> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: WorkerMessage) => {
      if (message.type === type) done(resolve);
      else if (message.type === 'error') done(() => reject(new Error(message.message)));
    };
    const onError = (error: Error) => done(() => reject(error));
    const done = (settle: () => void) => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      settle();
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
  });
}
