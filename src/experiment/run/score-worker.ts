/** The thread that runs quality.accuracy's regex scorer (see timed-score.ts): one answer per message, in order. */
import { parentPort } from 'node:worker_threads';
import { type Scorer, scoreAnswer } from '../../metrics/answer-score.js';

export interface ScoreRequest {
  scorer: Scorer;
  output: string;
  answer: string;
}

parentPort?.on('message', ({ scorer, output, answer }: ScoreRequest) => parentPort!.postMessage(scoreAnswer(scorer, output, answer)));
