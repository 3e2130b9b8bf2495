import { nextCapacityLevel } from '../../load/capacity.js';
import { capacityLevelPlan, planLevels } from '../../load/level.js';
import type { LengthDistribution, SessionsSource, Workload } from '../../load/types.js';
import { planWarmups, type WarmupStep } from '../../load/warmup.js';
import { EQUIVALENCE_WARMUP_REQUESTS } from '../../util/defaults.js';
import type { SampleItem } from '../spec/sample-set.js';
import type { AccuracySettings, ClientConfig, EquivalenceSettings } from '../spec/types.js';

/**
 * What a server declares about its own speed, for a plan without history: the simulator's load time and decode
 * model (its flags). Read by a caller that may read the simulator (the CLI); engines declare nothing.
 */
export interface DeclaredCosts {
  startupMs: number;
  /** Expected end-to-end time of one request with `active` requests in the batch. */
  requestMs(inputTokens: number, outputTokens: number, active: number): number;
  /** Where the figures come from, as the plan shows it ("simulator's --load-ms and decode model"). */
  basis: string;
}

/**
 * Servelab's own work around each start of a declared server (spawning it, probing readiness, fingerprint,
 * preflight): ~1 s per start measured for examples/sim-spec-decode.yaml on a loaded 2-core machine.
 */
export const START_OVERHEAD_MS = 1000;

/** Servelab's own work around each trial (cache salt or reset, telemetry, journal write): measured ~0.1 s locally. */
export const TRIAL_OVERHEAD_MS = 100;

/** Declared time of `requests` sent `concurrency` at a time, and one request's prompt and output lengths. */
interface Timing {
  rounds: (requests: number, concurrency: number) => number;
  input: number;
  output: number;
}

/**
 * Expected length of one trial of `workload` from declared request times: the warm-up every trial gets (none with
 * `warmup.perWorkload`: see declaredStartWarmupMs), then the measured requests in rounds of the concurrency (an
 * open-loop rate: its arrival span plus one request; generated sessions: sessionsTiming). Undefined for dataset
 * prompts, whose lengths are unknown until read.
 */
export function declaredTrialMs(costs: DeclaredCosts, workload: Workload, client: ClientConfig): number | undefined {
  const timing = timingOf(costs, client);
  if (!timing || workload.kind === 'trace') return undefined;
  const warmup = client.warmup.perWorkload ? 0 : warmupMs(costs, workload, client, timing);
  return TRIAL_OVERHEAD_MS + warmup + measuredMs(costs, workload, timing);
}

/** With `warmup.perWorkload`: the warm-up of the variant's first trial of `workload` after each server start. */
export function declaredStartWarmupMs(costs: DeclaredCosts, workload: Workload, client: ClientConfig): number | undefined {
  const timing = timingOf(costs, client);
  if (!timing) return undefined;
  return client.warmup.perWorkload ? warmupMs(costs, workload, client, timing) : 0;
}

function timingOf(costs: DeclaredCosts, client: ClientConfig): Timing | undefined {
  if (client.prompts.kind === 'sessions' && client.prompts.path === undefined) return sessionsTiming(costs, client.prompts);
  if (client.prompts.kind !== 'synthetic') return undefined;
  const input = meanLength(client.prompts.inputTokens);
  const output = meanLength(client.prompts.outputTokens);
  return {
    rounds: (requests, concurrency) => Math.ceil(requests / concurrency) * costs.requestMs(input, output, Math.min(requests, concurrency)),
    input,
    output,
  };
}

/**
 * Generated multi-turn sessions (load/sessions.ts, session-loop.ts): `requests` counts turns, `concurrency` sessions
 * in flight. A session sends its turns one after another, turn k carrying the k − 1 turns before it and their
 * answers (prefill grows; a prefix cache would shorten it, so this errs long), with the mean think time before each
 * next turn; sessions run in waves of `concurrency`. Sessions from a ShareGPT file have unknown lengths: undefined.
 */
function sessionsTiming(costs: DeclaredCosts, source: SessionsSource): Timing {
  const input = meanLength(source.inputTokens);
  const output = meanLength(source.outputTokens);
  const thinkMs = source.thinkTime.kind === 'fixed' ? source.thinkTime.ms : source.thinkTime.meanMs;
  return {
    rounds: (requests, concurrency) => {
      const sessions = Math.ceil(requests / source.turns);
      const turns = Math.min(source.turns, requests);
      const active = Math.min(concurrency, sessions);
      let sessionMs = (turns - 1) * thinkMs;
      for (let turn = 1; turn <= turns; turn++) sessionMs += costs.requestMs(turn * input + (turn - 1) * output, output, active);
      return Math.ceil(sessions / concurrency) * sessionMs;
    },
    input,
    output,
  };
}

/** The warm-up load/warmup.ts plans for this client (one thread's worth), round by round. */
function warmupMs(costs: DeclaredCosts, workload: Workload, client: ClientConfig, timing: Timing): number {
  const settings = {
    warmupRequests: client.warmup.requests,
    ...(client.warmup.durationMs !== undefined && { warmupMs: client.warmup.durationMs }),
    warmupPerLevel: client.warmup.perWorkload,
  };
  const workers = typeof client.workers === 'number' ? client.workers : 1;
  return planWarmups(settings, planLevels(workload), workers).reduce((total, step) => total + stepMs(costs, step, timing), 0);
}

function stepMs(costs: DeclaredCosts, step: WarmupStep, timing: Timing): number {
  const { plan } = step;
  const round = plan.rate ? rateMs(costs, { ...plan.rate, requests: plan.requests }, timing) : timing.rounds(plan.requests, plan.concurrency ?? 1);
  return step.durationMs === undefined ? round : Math.max(step.durationMs, round);
}

function measuredMs(costs: DeclaredCosts, workload: Exclude<Workload, { kind: 'trace' }>, timing: Timing): number {
  const { rounds } = timing;
  switch (workload.kind) {
    case 'single-stream':
      return rounds(workload.requests, 1);
    case 'concurrency':
      return rounds(workload.requests, workload.concurrency);
    case 'sweep':
      return workload.concurrencies.reduce((sum, concurrency) => sum + rounds(workload.requestsPerLevel, concurrency), 0);
    case 'rate':
      return rateMs(costs, workload, timing);
    case 'capacity': {
      // Its steps are chosen as it runs: counted as `steps` levels at the first one, the range's geometric middle.
      const first = capacityLevelPlan(workload, nextCapacityLevel(workload, []) ?? workload.min);
      const step: Workload = first.rate
        ? { kind: 'rate', requests: first.requests, ...first.rate }
        : { kind: 'concurrency', concurrency: first.concurrency ?? 1, requests: first.requests };
      return workload.steps * measuredMs(costs, step, timing);
    }
  }
}

function rateMs(costs: DeclaredCosts, rate: { requests: number; requestsPerSecond: number; maxInFlight: number }, { rounds, input, output }: Timing): number {
  const single = costs.requestMs(input, output, 1);
  const active = Math.min(rate.maxInFlight, Math.max(1, (rate.requestsPerSecond * single) / 1000));
  const span = (rate.requests / rate.requestsPerSecond) * 1000;
  // A rate above what maxInFlight can serve is paced by the slots instead.
  return Math.max(span, rounds(rate.requests, rate.maxInFlight)) + costs.requestMs(input, output, active);
}

/**
 * Declared time of the untimed quality.equivalence passes one variant sends at each server start
 * (run/equivalence.ts): its warm-up request and its prompts one at a time, every answer `outputTokens` long, then
 * (a warm-up and) all of them at once. Undefined for dataset prompts, whose lengths are unknown until read.
 */
export function declaredEquivalenceMs(costs: DeclaredCosts, settings: EquivalenceSettings, prompts: ClientConfig['prompts']): number | undefined {
  if (prompts.kind !== 'synthetic') return undefined;
  const input = meanLength(prompts.inputTokens);
  const single = costs.requestMs(input, settings.outputTokens, 1);
  const batch = settings.prompts > 1 ? single + costs.requestMs(input, settings.outputTokens, settings.prompts) : 0;
  return (settings.prompts + EQUIVALENCE_WARMUP_REQUESTS) * single + batch;
}

/** Characters per token of English text for the tokenizers in use (GPT/Llama BPE: about 4): a sample set's prompts are text, not tokens. */
const CHARS_PER_TOKEN = 4;

/**
 * Declared time of the untimed quality.accuracy pass one variant sends at each server start (run/accuracy.ts): its
 * items one at a time, each answer at its longest (`outputTokens`; a model that stops sooner takes less).
 */
export function declaredAccuracyMs(costs: DeclaredCosts, settings: AccuracySettings, items: readonly SampleItem[]): number {
  return items.reduce((total, item) => total + costs.requestMs(Math.max(1, Math.round(item.promptChars / CHARS_PER_TOKEN)), settings.outputTokens, 1), 0);
}

export function meanLength(length: LengthDistribution): number {
  switch (length.kind) {
    case 'fixed':
      return length.value;
    case 'uniform':
      return (length.min + length.max) / 2;
    case 'normal':
      return Math.min(length.max ?? Number.POSITIVE_INFINITY, Math.max(length.min ?? 1, length.mean));
  }
}
