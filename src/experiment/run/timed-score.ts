/**
 * quality.accuracy's answers scored with a time limit. A user's `regex:` pattern can backtrack catastrophically
 * (`(a+)+$` on a long answer runs for hours at 100% CPU); on the runner's thread it would freeze the run, its lease
 * heartbeat and its SIGTERM handler alike. So regex scorers run in a worker thread, one answer at a time: an answer
 * that takes longer than the limit has its worker terminated (V8 interrupts the match) and is left out, counted; an
 * abort (SIGTERM, a lost lease) terminates the worker at once. The other scorers are linear and run here.
 */
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { type Score, type Scorer, scoreAnswer } from '../../metrics/answer-score.js';
import type { ScoreRequest } from './score-worker.js';

/** Per answer: a sane pattern scores an answer of a few hundred tokens in microseconds. */
export const SCORE_TIME_LIMIT_MS = 1000;

export interface TimedScorer {
  /** The answer's score; undefined when the scorer ran over the time limit. Rejects when `signal` aborts. */
  score(output: string, answer: string): Promise<Score | undefined>;
  close(): Promise<void>;
}

export function timedScorer(scorer: Scorer, signal: AbortSignal, limitMs = SCORE_TIME_LIMIT_MS): TimedScorer {
  if (scorer.kind !== 'regex') return { score: async (output, answer) => scoreAnswer(scorer, output, answer), close: async () => {} };
  let worker: Promise<Worker> | undefined;
  const stop = async (): Promise<void> => {
    const running = worker;
    worker = undefined;
    await (await running?.catch(() => undefined))?.terminate();
  };
  // The limit counts from a running thread: starting one takes longer than a match on a loaded machine.
  const started = (): Promise<Worker> => {
    worker ??= (async () => {
      const thread = new Worker(new URL('./score-worker.js', import.meta.url));
      await once(thread, 'online');
      return thread;
    })();
    return worker;
  };
  return {
    score: async (output, answer) => {
      signal.throwIfAborted();
      const thread = await started();
      signal.throwIfAborted();
      return new Promise<Score | undefined>((resolve, reject) => {
        const settle = (finish: () => void): void => {
          clearTimeout(timer);
          signal.removeEventListener('abort', onAbort);
          thread.off('message', onMessage).off('error', onError);
          finish();
        };
        const onMessage = (score: Score): void => settle(() => resolve(score));
        const onError = (error: Error): void => settle(() => void stop().then(() => reject(error), reject));
        const onAbort = (): void => settle(() => void stop().then(() => reject(signal.reason), reject));
        const timer = setTimeout(() => settle(() => void stop().then(() => resolve(undefined), reject)), limitMs);
        thread.on('message', onMessage).on('error', onError);
        signal.addEventListener('abort', onAbort, { once: true });
        thread.postMessage({ scorer, output, answer } satisfies ScoreRequest);
      });
    },
    close: stop,
  };
}
