import cluster, { type Worker } from 'node:cluster';
import { signalChild } from '../util/child-signal.js';
import { messageOf, UserError } from '../util/errors.js';
import { SERVELAB_BIN } from './child.js';
import { parseSimConfig, type SimConfig } from './config.js';
import { type SimCounters, sumCounters } from './metrics.js';
import { logStatsPeriodically, startSimulator } from './server.js';
import { runStartup, type ServerState, vllmLogLine } from './startup.js';

/**
 * `simulate --workers N`: N simulator processes (node:cluster workers) share one port, the primary handing out
 * connections. Each worker is a data-parallel replica with its own batch; the primary plays the startup once,
 * drives every worker's lifecycle state, and answers /metrics, /sim/state and the stats lines with the sum of
 * all workers' counters, so counter deltas taken by a load client stay exact.
 */

const CONFIG_ENV = 'SERVELAB_SIM_REPLICA_CONFIG';
const INDEX_ENV = 'SERVELAB_SIM_REPLICA_INDEX';
const STOP_GRACE_MS = 3000;

type ToWorker =
  | { type: 'stop' }
  | { type: 'state'; id: number; state: ServerState }
  | { type: 'counters?'; id: number }
  | { type: 'workers'; id: number; workers: SimCounters[] };
type ToPrimary =
  | { type: 'listening'; port: number }
  | { type: 'failed'; message: string; hint: string; exitCode: number }
  | { type: 'state-ack'; id: number }
  | { type: 'counters'; id: number; counters: SimCounters }
  | { type: 'workers?'; id: number };

export interface ClusterOptions {
  log: (line: string) => void;
  /** A simulated crash calls this once every worker knows (the CLI exits 1). */
  onCrash: () => void;
}

export interface SimulatorCluster {
  url: string;
  port: number;
  /** Stops every worker; resolves once all exited. */
  close(): Promise<void>;
}

/** True in a process that the primary forked as a worker. */
export function isSimulatorReplica(): boolean {
  return cluster.isWorker && process.env[CONFIG_ENV] !== undefined;
}

/** Primary side: fork the workers, wait until all listen, then play the startup across them. */
export async function startSimulatorCluster(config: SimConfig, workers: number, options: ClusterOptions): Promise<SimulatorCluster> {
  const { log } = options;
  cluster.setupPrimary({ exec: SERVELAB_BIN, args: ['simulate'] });
  const forked: Worker[] = [];
  for (let index = 1; index <= workers; index += 1) forked.push(cluster.fork({ [CONFIG_ENV]: JSON.stringify(config), [INDEX_ENV]: String(index) }));

  let nextId = 0;
  /** Replies the primary waits for, by message id: one per worker. */
  const awaiting = new Map<number, { replies: unknown[]; done: (replies: unknown[]) => void }>();
  const askAll = (message: (id: number) => ToWorker): Promise<unknown[]> =>
    new Promise((done) => {
      const id = ++nextId;
      awaiting.set(id, { replies: [], done });
      for (const worker of forked) worker.send(message(id));
    });
  const reply = (id: number, value: unknown): void => {
    const entry = awaiting.get(id);
    if (!entry) return;
    entry.replies.push(value);
    if (entry.replies.length === forked.length) {
      awaiting.delete(id);
      entry.done(entry.replies);
    }
  };
  const perWorker = async (): Promise<SimCounters[]> => (await askAll((id) => ({ type: 'counters?', id }))) as SimCounters[];

  let closing = false;
  const listening = forked.map(
    (worker, index) =>
      new Promise<number>((resolve, reject) => {
        worker.on('message', (message: ToPrimary) => {
          switch (message.type) {
            case 'listening':
              return resolve(message.port);
            case 'failed':
              return reject(new UserError(message.message, message.hint, message.exitCode));
            case 'state-ack':
              return reply(message.id, true);
            case 'counters':
              return reply(message.id, message.counters);
            case 'workers?':
              return void perWorker().then((workers) => worker.send({ type: 'workers', id: message.id, workers } satisfies ToWorker));
          }
        });
        worker.once('exit', (code, signal) => {
          const how = signal ?? `code ${code}`;
          reject(new UserError(`simulator worker ${index + 1} exited (${how}) before listening`, 'see the lines above; try without --workers'));
          if (closing) return;
          // One replica gone means a broken server, like a dead data-parallel engine: end the whole process.
          log(vllmLogLine('ERROR', 'sim', `simulator worker ${index + 1} exited (${how}); shutting down`));
          closing = true;
          for (const other of forked) signalChild(other.process, 'SIGKILL');
          options.onCrash();
        });
      }),
  );
  let ports: number[];
  try {
    ports = await Promise.all(listening);
  } catch (error) {
    closing = true;
    for (const worker of forked) signalChild(worker.process, 'SIGKILL');
    throw error;
  }
  const port = ports[0]!;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;

  // Log lines and state changes keep their order: a line printed after `ready` means every worker is ready.
  let sequence = Promise.resolve();
  const inOrder = (step: () => unknown): void => {
    sequence = sequence.then(step).then(() => {});
  };
  const setState = (state: ServerState): void =>
    inOrder(async () => {
      await askAll((id) => ({ type: 'state', id, state }));
      if (state === 'crashed') options.onCrash();
    });
  log(vllmLogLine('INFO', 'sim', `${workers} simulator workers behind one port, each a data-parallel replica with its own batch of ${config.decode.maxBatch}`));
  const cancelStartup = runStartup(config, url, process.pid, { log: (line) => inOrder(() => log(line)), setState });
  const stopStats = logStatsPeriodically(async () => sumCounters(await perWorker()), config.statsIntervalMs, log);

  const close = async (): Promise<void> => {
    closing = true;
    cancelStartup();
    stopStats();
    await Promise.all(
      forked.map((worker) => {
        if (worker.isDead()) return undefined;
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.send({ type: 'stop' } satisfies ToWorker);
        const killer = setTimeout(() => signalChild(worker.process, 'SIGKILL'), STOP_GRACE_MS);
        return exited.finally(() => clearTimeout(killer));
      }),
    );
  };
  return { url, port, close };
}

/** Worker side: serve on the shared port, lifecycle and every worker's counters from the primary. */
export async function runSimulatorReplica(): Promise<void> {
  const send = (message: ToPrimary): void => void process.send!(message);
  const config = parseSimConfig(JSON.parse(process.env[CONFIG_ENV]!) as unknown);
  let nextId = 0;
  const pendingWorkers = new Map<number, (workers: SimCounters[]) => void>();
  const workers = (): Promise<SimCounters[]> =>
    new Promise((resolve) => {
      const id = ++nextId;
      pendingWorkers.set(id, resolve);
      send({ type: 'workers?', id });
    });
  let simulator;
  try {
    // onCrash does nothing here: the primary prints the traceback and exits, and the disconnect ends this worker.
    simulator = await startSimulator(config, { replica: { index: Number(process.env[INDEX_ENV]), workers }, onCrash: () => {} });
  } catch (error) {
    const known = error instanceof UserError ? error : undefined;
    send({ type: 'failed', message: messageOf(error), hint: known?.hint ?? 'try without --workers', exitCode: known?.exitCode ?? 1 });
    process.disconnect();
    return;
  }
  const sim = simulator;
  const stop = (): void => void sim.close().then(() => process.exit(0));
  process.on('message', (message: ToWorker) => {
    switch (message.type) {
      case 'stop':
        return stop();
      case 'state':
        sim.setState(message.state);
        return send({ type: 'state-ack', id: message.id });
      case 'counters?':
        return send({ type: 'counters', id: message.id, counters: sim.counters() });
      case 'workers':
        pendingWorkers.get(message.id)?.(message.workers);
        pendingWorkers.delete(message.id);
        return undefined;
    }
  });
  // A signal to the process group reaches the primary too, which stops each worker in turn: a worker quitting on
  // its own first would look like a dead replica to the primary.
  process.on('SIGTERM', () => {});
  process.on('SIGINT', () => {});
  // Without its primary the replica has no lifecycle and no totals: go too.
  process.once('disconnect', stop);
  send({ type: 'listening', port: sim.port });
}
