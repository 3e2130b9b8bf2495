import { setMaxListeners } from 'node:events';
import { parentPort, workerData } from 'node:worker_threads';
import { Pool } from 'undici';
import { messageOf } from '../../util/errors.js';
import { BACKENDS } from '../backends.js';
import { servedTrackingConnector } from '../connections.js';
import { groundTruthRecorder } from '../ground-truth.js';
import { type Arrival, type RequestContext, type RequestOutcome, streamRequest } from '../request.js';
import { loadTokenizer } from '../tokenizers/model.js';
import { type MainMessage, sharedNow, type WorkerLevel, type WorkerMessage, type WorkerSetup } from './protocol.js';

/**
 * A load-generation thread: its own event loop and connection pool, running its share of each level. Outcomes go
 * back in batches (one postMessage per request would cost more than the request's own parsing at high rates).
 */

const FLUSH_MS = 100;
const port = parentPort!;
const setup = workerData as WorkerSetup;
const post = (message: WorkerMessage) => port.postMessage(message);

const dispatcher = new Pool(setup.origin, { connections: setup.connections, pipelining: 1, connect: servedTrackingConnector() });
let controller = new AbortController();
const recorder = setup.groundTruth ? groundTruthRecorder() : undefined;
const context: RequestContext = {
  dispatcher,
  origin: setup.origin,
  pathPrefix: setup.pathPrefix,
  backend: BACKENDS[setup.backend],
  backendOptions: setup.backendOptions,
  requestTimeoutMs: setup.requestTimeoutMs,
  ...(setup.requestTimeoutSetting !== undefined && { requestTimeoutSetting: setup.requestTimeoutSetting }),
  ...(setup.tokenCounts !== undefined && { tokenCounts: setup.tokenCounts }),
  ...(setup.keepAlive === false && { keepAlive: false }),
  tokenizer: setup.tokenizerPath ? loadTokenizer(setup.tokenizerPath) : undefined,
  signal: controller.signal,
  ...(recorder && { onTokenEvent: recorder.onTokenEvent }),
};

function sleepUntilShared(at: number, signal: AbortSignal): Promise<void> {
  const delay = at - sharedNow();
  if (delay <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, delay);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

async function runShare(level: WorkerLevel): Promise<void> {
  controller = new AbortController();
  const signal = controller.signal;
  // Every request in flight listens on the abort signal; hundreds of them are expected, not a leak.
  setMaxListeners(0, signal);
  const levelContext = { ...context, signal };
  let pending: RequestOutcome[] = [];
  const flush = () => {
    if (pending.length === 0) return;
    post({ type: 'outcomes', outcomes: pending });
    pending = [];
  };
  const timer = setInterval(flush, FLUSH_MS);
  let sent = 0;
  const send = async (entry: WorkerLevel['items'][number], arrival?: Arrival) => {
    sent++;
    // Not `pending.push(await ...)`: that would push into the array a flush has already sent.
    const outcome = await streamRequest(levelContext, entry.item, entry.index, arrival);
    if (recorder) outcome.groundTruth = recorder.take(outcome.state);
    pending.push(outcome);
  };
  await sleepUntilShared(level.startAt, signal);
  if (level.openLoop) {
    let inFlight = 0;
    let slotFreed: (() => void) | undefined;
    const running: Array<Promise<void>> = [];
    for (const entry of level.items) {
      const dueAt = level.startAt + entry.dueAtMs!;
      await sleepUntilShared(dueAt, signal);
      const waitedForSlot = inFlight >= level.concurrency;
      while (inFlight >= level.concurrency && !signal.aborted) await new Promise<void>((resolve) => (slotFreed = resolve));
      if (signal.aborted) break;
      inFlight++;
      running.push(
        send(entry, { lateMs: sharedNow() - dueAt, waitedForSlot }).then(() => {
          inFlight--;
          slotFreed?.();
          slotFreed = undefined;
        }),
      );
    }
    await Promise.all(running);
  } else {
    let next = 0;
    const stream = async () => {
      while (next < level.items.length && !signal.aborted) await send(level.items[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(level.concurrency, level.items.length) }, stream));
  }
  const endAt = sharedNow();
  clearInterval(timer);
  flush();
  post({ type: 'finished', sent, endAt });
}

port.on('message', (message: MainMessage) => {
  if (message.type === 'abort') controller.abort();
  else if (message.type === 'close') void dispatcher.destroy().then(() => port.close());
  else runShare(message).catch((error: unknown) => post({ type: 'error', message: messageOf(error) }));
});
post({ type: 'ready' });
