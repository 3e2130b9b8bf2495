/** One engine's counters and batch gauges: what /metrics, /sim/state and the stats lines read. */
export interface SimCounters {
  promptTokens: number;
  generationTokens: number;
  requestsFinished: number;
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

/** vLLM-style Prometheus text exposition, so spec-decoding scrapers can be tested against the simulator. */
export function renderMetrics(model: string, counters: SimCounters): string {
  const labels = `{model_name="${model.replace(/["\\]/g, '\\$&')}"}`;
  const lines: string[] = [];
  const add = (name: string, type: 'gauge' | 'counter', help: string, value: number): void => {
    const sample = type === 'counter' ? `${name}_total` : name;
    lines.push(`# HELP ${sample} ${help}`, `# TYPE ${sample} ${type}`, `${sample}${labels} ${value.toFixed(1)}`);
  };
  add('vllm:num_requests_running', 'gauge', 'Number of requests in model execution batches.', counters.running);
  add('vllm:num_requests_waiting', 'gauge', 'Number of requests waiting to be processed.', counters.waiting);
  add('vllm:prompt_tokens', 'counter', 'Number of prefill tokens processed.', counters.promptTokens);
  add('vllm:generation_tokens', 'counter', 'Number of generation tokens processed.', counters.generationTokens);
  add('vllm:request_success', 'counter', 'Count of successfully processed requests.', counters.requestsFinished);
  add('vllm:spec_decode_num_drafts', 'counter', 'Number of spec decoding drafts.', counters.specDrafts);
  add('vllm:spec_decode_num_draft_tokens', 'counter', 'Number of draft tokens.', counters.specDraftTokens);
  add('vllm:spec_decode_num_accepted_tokens', 'counter', 'Number of accepted tokens.', counters.specAcceptedTokens);
  if (counters.specAcceptedPerPosition.length > 0) {
    const sample = 'vllm:spec_decode_num_accepted_tokens_per_pos_total';
    lines.push(`# HELP ${sample} Accepted tokens per draft position.`, `# TYPE ${sample} counter`);
    counters.specAcceptedPerPosition.forEach((value, position) => lines.push(`${sample}${labels.slice(0, -1)},position="${position}"} ${value.toFixed(1)}`));
  }
  return `${lines.join('\n')}\n`;
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

/** One engine's running counters (vLLM's names); the scheduler owns the gauges, passed in when read. */
export class SimMetrics {
  promptTokens = 0;
  generationTokens = 0;
  requestsFinished = 0;
  specDrafts = 0;
  specDraftTokens = 0;
  specAcceptedTokens = 0;
  /** Accepted drafts by position in the draft (index 0 = first draft token), as vLLM's per-position counter. */
  specAcceptedPerPosition: number[] = [];

  counters(running: number, waiting: number): SimCounters {
    const { promptTokens, generationTokens, requestsFinished, specDrafts, specDraftTokens, specAcceptedTokens } = this;
    return {
      promptTokens,
      generationTokens,
      requestsFinished,
      specDrafts,
      specDraftTokens,
      specAcceptedTokens,
      specAcceptedPerPosition: [...this.specAcceptedPerPosition],
      running,
      waiting,
    };
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
