import { deriveSeed, mulberry32, type Random } from '../util/random.js';
import { type AnswerKey, readAnswerKey } from './answer-key.js';
import { nowMs, sleepUntil, yieldToEventLoop } from './clock.js';
import type { SimConfig } from './config.js';
import { type SimCounters, SimMetrics } from './metrics.js';
import { driftFactor, type EnvLookup, envSpeedup, sampleAcceptedDrafts, sampleStepMs, sampleTtftMs } from './model.js';
import { greedyOutput } from './output.js';
import { BatchScheduler } from './scheduler.js';
import { type SimToken, sampleToken } from './text.js';

export interface GenerationParams {
  promptTokens: number;
  /** Leading prompt tokens found in the prefix cache: no prefill cost. */
  cachedTokens?: number;
  maxTokens: number;
  ignoreEos: boolean;
  /**
   * The prompt as text (JSON for token ids or messages) when the request decodes greedily (temperature 0 or top-k 1):
   * its tokens then depend on the prompt alone (src/simulate/output.ts); otherwise they are drawn per request.
   */
  greedyPrompt?: string;
  /** The server's own request (SGLang's health-check generation): not in the per-request counters. */
  internal?: boolean;
}

/** Tokens produced by one engine step: the prefill's first token, or one decode/verification step. */
export interface EngineStep {
  /** 0 for the prefill token, then 1, 2, … per decode step. */
  index: number;
  tokens: SimToken[];
  /** Draft tokens this verification step accepted (0 for the prefill and without speculative decoding). */
  accepted: number;
  /** Tokens produced so far, including these. */
  totalTokens: number;
  /** True on the last step. */
  last: boolean;
  /** Why generation ended; set on the last step only. */
  finishReason?: FinishReason;
  /** The request's prompt tokens found in the prefix cache (the same on every step; SGLang sends it with each chunk). */
  cachedTokens: number;
}

export type FinishReason = 'length' | 'stop';

export interface GenerationOutcome {
  completionTokens: number;
  finishReason: FinishReason;
  /** Decode (verification) steps after the prefill token. */
  decodeSteps: number;
  draftTokens: number;
  acceptedDraftTokens: number;
  /** From slot grant to the first token, and from there to the last. */
  promptMs: number;
  decodeMs: number;
  /** Prompt tokens found in the prefix cache (GenerationParams.cachedTokens, 0 without one). */
  cachedTokens: number;
}

/** Called per step; a returned promise (e.g. waiting for the socket to drain) holds the next step back. */
export type StepSink = (step: EngineStep) => void | Promise<void>;

/** Zero-latency streams write this many steps back to back before letting other streams and I/O run. */
const STEPS_PER_YIELD = 16;

/** The simulated inference engine: batch slots, timing model and counters, shared by all protocol front-ends. */
export class SimEngine {
  readonly metrics = new SimMetrics();
  readonly scheduler: BatchScheduler;
  /** Decode speed multiplier from envSpeedups, fixed at start like a real server's environment. */
  readonly speedup: number;
  private requestCount = 0;
  private readonly seed: number;
  /** Wall-clock origin of the machine drift. */
  private readonly driftOrigin: number;
  /** performance.now() of the latest step that produced output (SGLang's health check waits for one). */
  lastOutputAt = -Infinity;
  /** --answer-key: prompts the simulated model knows the answer to. */
  private readonly answers: AnswerKey | undefined;
  /** Largest batch a decode step has run since start (config.decode.newBatchMs), and when the batch's stall ends. */
  private largestBatch = 0;
  private stalledUntil = -Infinity;

  /** `replica` > 0 (a worker of a multi-worker simulator) salts the seed, so no two workers replay one stream. */
  constructor(
    readonly config: SimConfig,
    env: EnvLookup,
    replica = 0,
  ) {
    this.scheduler = new BatchScheduler(config.decode.maxBatch);
    this.speedup = envSpeedup(config, env);
    this.seed = replica === 0 ? config.decode.seed : deriveSeed(config.decode.seed, -replica);
    this.driftOrigin = config.decode.drift.sinceEpochMs ?? Date.now();
    this.answers = config.output.answerKey === undefined ? undefined : readAnswerKey(config.output.answerKey);
  }

  /** A reproducible random stream for the next request (timings, text, EOS, faults). */
  nextRequestRng(): Random {
    this.requestCount += 1;
    return mulberry32(deriveSeed(this.seed, this.requestCount));
  }

  /** Counters plus the scheduler's gauges, as of now. */
  counters(): SimCounters {
    return this.metrics.counters(this.scheduler.running, this.scheduler.queued);
  }

  /**
   * A step at a batch larger than any run since start stalls the whole batch by newBatchMs per size it grew by
   * (kernels compiled or autotuned for each new shape, the allocator growing): every running request's next step
   * waits for the returned time. Sizes up to the largest so far count as warm, as a batch's ramp-up passes each.
   * Stalls queue behind one another (one device compiles one shape at a time): a batch that grows again while stalled
   * waits for both, so the total cost does not depend on how the requests' arrivals were spread.
   */
  private newBatchStall(): number {
    const size = this.scheduler.running;
    if (this.config.decode.newBatchMs > 0 && size > this.largestBatch) {
      this.stalledUntil = Math.max(nowMs(), this.stalledUntil) + (size - this.largestBatch) * this.config.decode.newBatchMs;
      this.largestBatch = size;
    }
    return this.stalledUntil;
  }

  /** Runs one request through queue, prefill and decode; undefined when `signal` aborted it. */
  async generate(params: GenerationParams, rng: Random, signal: AbortSignal, sink: StepSink): Promise<GenerationOutcome | undefined> {
    if (!(await this.scheduler.acquire(signal))) return undefined;
    try {
      return await this.run(params, rng, signal, sink);
    } finally {
      this.scheduler.release();
    }
  }

  private async run(params: GenerationParams, rng: Random, signal: AbortSignal, sink: StepSink): Promise<GenerationOutcome | undefined> {
    const { config } = this;
    const { eosProbability, spec } = config.decode;
    const start = nowMs();
    const counted = params.internal !== true;
    if (counted) this.metrics.promptTokens += params.promptTokens;

    let deadline = start + sampleTtftMs(config, params.promptTokens - (params.cachedTokens ?? 0), this.scheduler.running, rng);
    await sleepUntil(deadline, signal);
    if (signal.aborted) return undefined;
    const firstTokenAt = nowMs();

    const outcome: GenerationOutcome = {
      completionTokens: 0,
      finishReason: 'length',
      decodeSteps: 0,
      draftTokens: 0,
      acceptedDraftTokens: 0,
      promptMs: firstTokenAt - start,
      decodeMs: 0,
      cachedTokens: params.cachedTokens ?? 0,
    };
    const greedy =
      params.greedyPrompt === undefined ? undefined : greedyOutput(config.decode.seed, params.greedyPrompt, config.output, params.maxTokens, this.answers);
    // Whether another request has shared the batch at any step so far (--batch-variance: batched answers depart).
    let shared = false;
    let stepsSinceYield = 0;
    for (let index = 0; ; index += 1) {
      if (index > 0) {
        const drift = driftFactor(config, Date.now() - this.driftOrigin);
        const stepMs = sampleStepMs(config, this.scheduler.running, this.speedup / drift, rng, drift);
        // Absolute deadlines keep timer lateness from accumulating; but a server that fell more than a step
        // behind (overloaded host) restarts its schedule rather than bursting to catch up.
        deadline = Math.max(deadline + stepMs, nowMs() - stepMs, this.newBatchStall());
        if (deadline > nowMs()) {
          await sleepUntil(deadline, signal);
          stepsSinceYield = 0;
        } else if (++stepsSinceYield >= STEPS_PER_YIELD) {
          await yieldToEventLoop();
          stepsSinceYield = 0;
        }
        if (signal.aborted) return undefined;
      }
      const accepted = index > 0 && spec.draftTokens > 0 ? sampleAcceptedDrafts(config, rng) : 0;
      if (index > 0) {
        outcome.decodeSteps += 1;
        if (spec.draftTokens > 0) {
          outcome.draftTokens += spec.draftTokens;
          outcome.acceptedDraftTokens += accepted;
          this.metrics.recordStep(spec.draftTokens, accepted);
        }
      }
      shared ||= this.scheduler.running > 1;
      const tokens: SimToken[] = [];
      const wanted = Math.min(accepted + 1, params.maxTokens - outcome.completionTokens);
      while (tokens.length < wanted) {
        const position = outcome.completionTokens + tokens.length;
        tokens.push(greedy ? greedy.token(position, shared) : sampleToken(rng));
        if (!params.ignoreEos && (greedy ? greedy.eosAfter(position, eosProbability) : eosProbability > 0 && rng() < eosProbability)) {
          outcome.finishReason = 'stop';
          break;
        }
      }
      outcome.completionTokens += tokens.length;
      if (counted) this.metrics.generationTokens += tokens.length;
      this.lastOutputAt = nowMs();
      const last = outcome.finishReason === 'stop' || outcome.completionTokens >= params.maxTokens;
      const step = { index, tokens, accepted, totalTokens: outcome.completionTokens, last, cachedTokens: outcome.cachedTokens };
      const pending = sink(last ? { ...step, finishReason: outcome.finishReason } : step);
      if (pending) await pending;
      if (signal.aborted) return undefined;
      if (last) break;
    }
    outcome.decodeMs = nowMs() - firstTokenAt;
    if (counted) this.metrics.recordFinished(outcome.completionTokens, spec.draftTokens > 0 ? outcome.decodeSteps : 0);
    return outcome;
  }
}
