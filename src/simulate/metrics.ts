/** One engine's counters and batch gauges: what /metrics, /sim/state and the stats lines read. */
export interface SimCounters {
  promptTokens: number;
  generationTokens: number;
  requestsFinished: number;
  /** Output tokens and verification steps of finished requests, counted when each finishes (as SGLang counts them). */
  finishedCompletionTokens: number;
  finishedVerifySteps: number;
  specDrafts: number;
  specDraftTokens: number;
  specAcceptedTokens: number;
  /** Accepted drafts by position in the draft (index 0 = first draft token), as vLLM's per-position counter. */
  specAcceptedPerPosition: number[];
  running: number;
  waiting: number;
}

export interface CounterSnapshot extends SimCounters {
  at: number;
}

const SCALAR_COUNTERS = [
  'promptTokens',
  'generationTokens',
  'requestsFinished',
  'finishedCompletionTokens',
  'finishedVerifySteps',
  'specDrafts',
  'specDraftTokens',
  'specAcceptedTokens',
  'running',
  'waiting',
] as const;

/** Totals over the replicas of a multi-worker simulator: every counter and gauge is a plain sum (per position, too). */
export function sumCounters(parts: readonly SimCounters[]): SimCounters {
  const total: SimCounters = {
    promptTokens: 0,
    generationTokens: 0,
    requestsFinished: 0,
    finishedCompletionTokens: 0,
    finishedVerifySteps: 0,
    specDrafts: 0,
    specDraftTokens: 0,
    specAcceptedTokens: 0,
    specAcceptedPerPosition: [],
    running: 0,
    waiting: 0,
  };
  for (const part of parts) {
    for (const key of SCALAR_COUNTERS) total[key] += part[key];
    part.specAcceptedPerPosition.forEach(
      (value, position) => (total.specAcceptedPerPosition[position] = (total.specAcceptedPerPosition[position] ?? 0) + value),
    );
  }
  return total;
}

/** One Prometheus exposition being written: HELP/TYPE then the sample, labels escaped once. */
class Exposition {
  readonly lines: string[] = [];
  constructor(private readonly labels: string) {}

  add(name: string, type: 'gauge' | 'counter', help: string, value: number): void {
    const sample = type === 'counter' ? `${name}_total` : name;
    this.lines.push(`# HELP ${sample} ${help}`, `# TYPE ${sample} ${type}`, `${sample}${this.labels} ${sampleValue(value)}`);
  }

  perPosition(name: string, help: string, values: readonly number[]): void {
    if (values.length === 0) return;
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
    values.forEach((value, position) => this.lines.push(`${name}${this.labels.slice(0, -1)},position="${position}"} ${value.toFixed(1)}`));
  }

  text(): string {
    return `${this.lines.join('\n')}\n`;
  }
}

/** Prometheus client style: integers as `12.0`, fractions in full (a ratio gauge must not lose its digits). */
const sampleValue = (value: number): string => (Number.isInteger(value) ? value.toFixed(1) : String(value));

const escapeLabel = (value: string): string => value.replace(/["\\]/g, '\\$&');

/**
 * vLLM-style Prometheus text exposition, so spec-decoding scrapers can be tested against the simulator. The vllm
 * personality labels every sample with `engine` as vLLM V1 does (vllm/v1/metrics/loggers.py) and exports the
 * spec-decode families only with speculative decoding on, as vLLM registers them only then.
 */
export function renderMetrics(
  model: string,
  counters: SimCounters,
  vllm?: { draftTokens: number; prefixCache?: { queryTokens: number; hitTokens: number } },
): string {
  const out = new Exposition(vllm ? `{engine="0",model_name="${escapeLabel(model)}"}` : `{model_name="${escapeLabel(model)}"}`);
  if (vllm?.prefixCache) {
    // vllm/v1/metrics/loggers.py: counters of prompt tokens looked up in, and found in, the prefix cache.
    out.add('vllm:prefix_cache_queries', 'counter', 'Prefix cache queries, in terms of number of queried tokens.', vllm.prefixCache.queryTokens);
    out.add('vllm:prefix_cache_hits', 'counter', 'Prefix cache hits, in terms of number of cached tokens.', vllm.prefixCache.hitTokens);
  }
  out.add('vllm:num_requests_running', 'gauge', 'Number of requests in model execution batches.', counters.running);
  out.add('vllm:num_requests_waiting', 'gauge', 'Number of requests waiting to be processed.', counters.waiting);
  out.add('vllm:prompt_tokens', 'counter', 'Number of prefill tokens processed.', counters.promptTokens);
  out.add('vllm:generation_tokens', 'counter', 'Number of generation tokens processed.', counters.generationTokens);
  out.add('vllm:request_success', 'counter', 'Count of successfully processed requests.', counters.requestsFinished);
  if (vllm && vllm.draftTokens === 0) return out.text();
  out.add('vllm:spec_decode_num_drafts', 'counter', 'Number of spec decoding drafts.', counters.specDrafts);
  out.add('vllm:spec_decode_num_draft_tokens', 'counter', 'Number of draft tokens.', counters.specDraftTokens);
  out.add('vllm:spec_decode_num_accepted_tokens', 'counter', 'Number of accepted tokens.', counters.specAcceptedTokens);
  // vLLM creates one series per draft position up front, so they read 0 before the first draft.
  const positions = vllm
    ? Array.from({ length: vllm.draftTokens }, (_, position) => counters.specAcceptedPerPosition[position] ?? 0)
    : counters.specAcceptedPerPosition;
  out.perPosition('vllm:spec_decode_num_accepted_tokens_per_pos_total', 'Accepted tokens per draft position.', positions);
  return out.text();
}

/**
 * SGLang's exposition (python/sglang/srt/metrics/collector.py): the tokenizer-side counters move when a request
 * finishes (`observe_one_finished_request`: prompt/generation tokens, requests, and `spec_verify_calls_total` by the
 * request's verify count); `spec_accept_length` and `spec_accept_rate` are scheduler gauges ("mostrecent"), here
 * over the server's life rather than SGLang's last log interval, with the scheduler's definitions:
 * length = (correct drafts + verify steps) / verify steps, rate = correct drafts / proposed drafts.
 */
export function renderSglangMetrics(model: string, counters: SimCounters, draftTokens: number): string {
  const out = new Exposition(`{model_name="${escapeLabel(model)}",engine_type="unified",tp_rank="0",pp_rank="0"}`);
  out.add('sglang:num_running_reqs', 'gauge', 'The number of running requests.', counters.running);
  out.add('sglang:num_queue_reqs', 'gauge', 'The number of requests in the waiting queue.', counters.waiting);
  out.add('sglang:prompt_tokens', 'counter', 'Number of prefill tokens processed.', counters.promptTokens);
  out.add('sglang:generation_tokens', 'counter', 'Number of generation tokens processed.', counters.finishedCompletionTokens);
  out.add('sglang:num_requests', 'counter', 'Number of requests processed.', counters.requestsFinished);
  if (draftTokens > 0) {
    const steps = counters.specDrafts;
    out.add(
      'sglang:spec_accept_length',
      'gauge',
      'The average acceptance length of speculative decoding.',
      steps > 0 ? (counters.specAcceptedTokens + steps) / steps : 0,
    );
    out.add(
      'sglang:spec_accept_rate',
      'gauge',
      'The average acceptance rate of speculative decoding (`accepted tokens / total draft tokens` in batch).',
      counters.specDraftTokens > 0 ? counters.specAcceptedTokens / counters.specDraftTokens : 0,
    );
    out.add('sglang:spec_verify_calls', 'counter', 'Number of speculative decoding verification calls.', counters.finishedVerifySteps);
    // The adaptive tier in force (sglang#25940); the simulator's is fixed: its draft chain and, as /server_info
    // says, speculative_num_draft_tokens = steps + 1.
    out.add('sglang:spec_num_steps', 'gauge', 'The current speculative num steps.', draftTokens);
    out.add('sglang:spec_num_draft_tokens', 'gauge', 'The current speculative num draft tokens.', draftTokens + 1);
  }
  return out.text();
}

/**
 * vLLM's periodic engine stats lines for the interval between two snapshots (the spec line only with spec on);
 * log-based monitors read throughput and acceptance from these.
 */
export function statsLines(previous: CounterSnapshot, current: CounterSnapshot): string[] {
  const { running, waiting } = current;
  const seconds = Math.max(1e-9, (current.at - previous.at) / 1000);
  const lines = [
    `Engine 000: Avg prompt throughput: ${((current.promptTokens - previous.promptTokens) / seconds).toFixed(1)} tokens/s, ` +
      `Avg generation throughput: ${((current.generationTokens - previous.generationTokens) / seconds).toFixed(1)} tokens/s, ` +
      `Running: ${running} reqs, Waiting: ${waiting} reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%`,
  ];
  const drafts = current.specDrafts - previous.specDrafts;
  if (drafts > 0) {
    const draftTokens = current.specDraftTokens - previous.specDraftTokens;
    const accepted = current.specAcceptedTokens - previous.specAcceptedTokens;
    lines.push(
      `SpecDecoding metrics: Draft acceptance rate: ${((100 * accepted) / draftTokens).toFixed(1)}%, ` +
        `Mean acceptance length: ${(1 + accepted / drafts).toFixed(2)}, Accepted: ${accepted} tokens, Drafted: ${draftTokens} tokens`,
    );
  }
  return lines;
}

/**
 * SGLang's decode log line for the interval (python/sglang/srt/managers/scheduler_metrics_mixin.py
 * `log_decode_stats`), with `accept len` and `accept rate` of the interval's verify steps when spec is on.
 */
export function sglangDecodeLine(previous: CounterSnapshot, current: CounterSnapshot): string {
  const seconds = Math.max(1e-9, (current.at - previous.at) / 1000);
  const steps = current.specDrafts - previous.specDrafts;
  const accepted = current.specAcceptedTokens - previous.specAcceptedTokens;
  const proposed = current.specDraftTokens - previous.specDraftTokens;
  const spec = steps > 0 ? `accept len: ${((accepted + steps) / steps).toFixed(2)}, accept rate: ${(accepted / proposed).toFixed(2)}, ` : '';
  return (
    `Decode batch, #running-req: ${current.running}, #token: 0, token usage: 0.00, ${spec}cuda graph: True, ` +
    `gen throughput (token/s): ${((current.generationTokens - previous.generationTokens) / seconds).toFixed(2)}, #queue-req: ${current.waiting}, `
  );
}

/** One engine's running counters (vLLM's names); the scheduler owns the gauges, passed in when read. */
export class SimMetrics {
  promptTokens = 0;
  generationTokens = 0;
  requestsFinished = 0;
  finishedCompletionTokens = 0;
  finishedVerifySteps = 0;
  specDrafts = 0;
  specDraftTokens = 0;
  specAcceptedTokens = 0;
  /** Accepted drafts by position in the draft (index 0 = first draft token), as vLLM's per-position counter. */
  specAcceptedPerPosition: number[] = [];

  counters(running: number, waiting: number): SimCounters {
    const { promptTokens, generationTokens, requestsFinished, finishedCompletionTokens, finishedVerifySteps, specDrafts, specDraftTokens, specAcceptedTokens } =
      this;
    return {
      promptTokens,
      generationTokens,
      requestsFinished,
      finishedCompletionTokens,
      finishedVerifySteps,
      specDrafts,
      specDraftTokens,
      specAcceptedTokens,
      specAcceptedPerPosition: [...this.specAcceptedPerPosition],
      running,
      waiting,
    };
  }

  recordFinished(completionTokens: number, verifySteps: number): void {
    this.requestsFinished += 1;
    this.finishedCompletionTokens += completionTokens;
    this.finishedVerifySteps += verifySteps;
  }

  recordStep(draftTokens: number, acceptedTokens: number): void {
    if (draftTokens === 0) return;
    this.specDrafts += 1;
    this.specDraftTokens += draftTokens;
    this.specAcceptedTokens += acceptedTokens;
    while (this.specAcceptedPerPosition.length < draftTokens) this.specAcceptedPerPosition.push(0);
    // Drafts are accepted as a leading run, so the first `acceptedTokens` positions each count one.
    for (let position = 0; position < acceptedTokens; position += 1) this.specAcceptedPerPosition[position]! += 1;
  }
}
