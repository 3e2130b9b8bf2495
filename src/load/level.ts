import { DEFAULT_MAX_IN_FLIGHT } from '../util/defaults.js';
import { mulberry32 } from '../util/random.js';
import type { PromptItem } from './prompts.js';
import { interArrivalMs } from './random.js';
import { type RequestContext, type RequestOutcome, streamRequest } from './request.js';
import type { RateSchedule, Workload } from './types.js';

export type CapacityWorkload = Extract<Workload, { kind: 'capacity' }>;

/** One measured level of a workload: a fixed concurrency, an arrival rate or a trace's arrivals. */
export interface LevelPlan {
  label: string;
  requests: number;
  /** Closed loop: this many requests in flight at all times. */
  concurrency?: number;
  /** Open loop: arrivals at this rate, at most maxInFlight in flight (later arrivals wait for a slot). */
  rate?: RateSchedule;
  /** Open loop: arrivals at each prompt's `arrivalMs` (a trace), at most maxInFlight in flight. */
  replay?: { maxInFlight: number };
}

/** The label of a trace workload's level. */
export const TRACE_LABEL = 'trace';

/** The levels of a workload; a trace workload's size comes from its trace (`traceRequests`: the requests in its window). */
export function planLevels(workload: Workload, traceRequests = 0): LevelPlan[] {
  switch (workload.kind) {
    case 'single-stream':
      return [{ label: 'single-stream', requests: workload.requests, concurrency: 1 }];
    case 'concurrency':
      return [{ label: `c=${workload.concurrency}`, requests: workload.requests, concurrency: workload.concurrency }];
    case 'rate':
      return [
        {
          label: rateLabel(workload),
          requests: workload.requests,
          rate: {
            requestsPerSecond: workload.requestsPerSecond,
            arrival: workload.arrival,
            ...(workload.burstiness !== undefined && { burstiness: workload.burstiness }),
            maxInFlight: workload.maxInFlight,
          },
        },
      ];
    case 'sweep':
      return workload.concurrencies.map((concurrency) => ({ label: `c=${concurrency}`, requests: workload.requestsPerLevel, concurrency }));
    case 'trace':
      return [{ label: TRACE_LABEL, requests: workload.requests ?? traceRequests, replay: { maxInFlight: workload.maxInFlight } }];
    case 'capacity':
      // Its steps are chosen as it runs (load/capacity.ts); its heaviest level sizes the connection pool and warm-up.
      return [capacityLevelPlan(workload, workload.max)];
  }
}

/** The level of one step: closed loop at `at` requests in flight, or open loop at `at` requests per second. */
export function capacityLevelPlan(workload: CapacityWorkload, at: number): LevelPlan {
  if (workload.over === 'concurrency') return { label: `c=${at}`, requests: workload.requestsPerStep, concurrency: at };
  const rate = {
    requestsPerSecond: at,
    arrival: workload.arrival ?? 'poisson',
    ...(workload.burstiness !== undefined && { burstiness: workload.burstiness }),
    maxInFlight: workload.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT,
  };
  return { label: rateLabel(rate), requests: workload.requestsPerStep, rate };
}

/** "rate=4/s"; gamma arrivals add their burstiness ("rate=4/s,burstiness=0.5"), so both can be workloads of one run. */
export function rateLabel(schedule: Pick<RateSchedule, 'requestsPerSecond' | 'arrival' | 'burstiness'>): string {
  const base = `rate=${schedule.requestsPerSecond}/s`;
  return schedule.arrival === 'gamma' ? `${base},burstiness=${schedule.burstiness ?? 1}` : base;
}

/** Labels of a workload's levels, e.g. ["c=1", "c=8"]: the names trials and reports use. */
export function workloadLabels(workload: Workload): string[] {
  return planLevels(workload).map((level) => level.label);
}

/** Most requests a level keeps in flight: the connection pool is sized to this. */
export function maxInFlight(level: LevelPlan): number {
  return level.concurrency ?? level.rate?.maxInFlight ?? level.replay?.maxInFlight ?? 1;
}

export interface LevelRun {
  outcomes: RequestOutcome[];
  /** First send to last completion, seconds. */
  durationS: number;
}

/**
 * Run the prompts of one level. Stops issuing new requests when the context's signal aborts; requests in flight are
 * aborted by that same signal and come back as 'aborted' samples. `onDone` is called after every request; when it
 * returns a promise, no new request is sent until it settles (a liveness check after a refused connection).
 */
export async function runLevel(
  context: RequestContext,
  level: LevelPlan,
  prompts: readonly PromptItem[],
  seed: number,
  onDone?: (outcome: RequestOutcome) => void | Promise<void>,
): Promise<LevelRun> {
  const outcomes: RequestOutcome[] = [];
  const started = performance.now();
  const record = (outcome: RequestOutcome): void | Promise<void> => {
    outcomes.push(outcome);
    return onDone?.(outcome);
  };
  const open = openSchedule(level, seed);
  if (open) await runOpenLoop(context, open, prompts, record);
  else await runClosedLoop(context, level.concurrency ?? 1, prompts, record);
  outcomes.sort((a, b) => a.sample.index - b.sample.index);
  return { outcomes, durationS: (performance.now() - started) / 1000 };
}

type Recorder = (outcome: RequestOutcome) => void | Promise<void>;

async function runClosedLoop(context: RequestContext, concurrency: number, prompts: readonly PromptItem[], record: Recorder): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < prompts.length && !context.signal?.aborted) {
      const index = next++;
      await record(await streamRequest(context, prompts[index]!, index));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, prompts.length) }, worker));
}

/** An open loop's arrivals: the due time of each prompt (ms from the level's start, non-decreasing) and the cap. */
interface OpenSchedule {
  maxInFlight: number;
  dueAt(prompts: readonly PromptItem[]): number[];
}

/** A rate level's seeded gaps, or a trace's recorded arrivals; undefined for a closed loop. */
export function openSchedule(level: LevelPlan, seed: number): OpenSchedule | undefined {
  const { rate, replay } = level;
  if (rate)
    return {
      maxInFlight: rate.maxInFlight,
      dueAt(prompts) {
        const random = mulberry32(seed);
        let at = 0;
        return prompts.map((_, index) => (index === 0 ? 0 : (at += interArrivalMs(rate, random))));
      },
    };
  if (replay) return { maxInFlight: replay.maxInFlight, dueAt: (prompts) => prompts.map((item) => item.arrivalMs ?? 0) };
  return undefined;
}

async function runOpenLoop(context: RequestContext, schedule: OpenSchedule, prompts: readonly PromptItem[], record: Recorder): Promise<void> {
  const due = schedule.dueAt(prompts);
  let gate: Promise<void> | undefined;
  const start = performance.now();
  let inFlight = 0;
  let slotFreed: (() => void) | undefined;
  const running: Array<Promise<void>> = [];
  for (let index = 0; index < prompts.length; index++) {
    const dueAt = due[index]!;
    await sleepUntil(start + dueAt, context.signal);
    const waitedForSlot = inFlight >= schedule.maxInFlight;
    while (inFlight >= schedule.maxInFlight && !context.signal?.aborted) await new Promise<void>((resolve) => (slotFreed = resolve));
    if (gate) await gate;
    if (context.signal?.aborted) break;
    inFlight++;
    // Late against the schedule (cap, liveness check, a busy event loop): the request's latency counts from its arrival.
    const arrival = { lateMs: performance.now() - (start + dueAt), waitedForSlot };
    running.push(
      streamRequest(context, prompts[index]!, index, arrival).then((outcome) => {
        inFlight--;
        const pending = record(outcome);
        if (pending) gate = pending;
        slotFreed?.();
        slotFreed = undefined;
      }),
    );
  }
  await Promise.all(running);
}

/** Resolves at `deadline` (performance.now() ms) or at once when `signal` aborts. */
export function sleepUntil(deadline: number, signal?: AbortSignal): Promise<void> {
  const delay = deadline - performance.now();
  if (delay <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, delay);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
