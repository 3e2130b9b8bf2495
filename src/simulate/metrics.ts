/** One engine's counters and batch gauges: what /metrics, /sim/state and the stats lines read. */
export interface SimCounters {
  promptTokens: number;
  generationTokens: number;
  requestsFinished: number;
  specDrafts: number;
  specDraftTokens: number;
  specAcceptedTokens: number;
  running: number;
  waiting: number;
}

export interface CounterSnapshot extends SimCounters {
  at: number;
}

/** Totals over the replicas of a multi-worker simulator: every counter and gauge is a plain sum. */
export function sumCounters(parts: readonly SimCounters[]): SimCounters {
  const total: SimCounters = { promptTokens: 0, generationTokens: 0, requestsFinished: 0, specDrafts: 0, specDraftTokens: 0, specAcceptedTokens: 0, running: 0, waiting: 0 };
  for (const part of parts) {
    for (const key of Object.keys(total) as (keyof SimCounters)[]) total[key] += part[key];
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

  counters(running: number, waiting: number): SimCounters {
    const { promptTokens, generationTokens, requestsFinished, specDrafts, specDraftTokens, specAcceptedTokens } = this;
    return { promptTokens, generationTokens, requestsFinished, specDrafts, specDraftTokens, specAcceptedTokens, running, waiting };
  }

  recordStep(draftTokens: number, acceptedTokens: number): void {
    if (draftTokens === 0) return;
    this.specDrafts += 1;
    this.specDraftTokens += draftTokens;
    this.specAcceptedTokens += acceptedTokens;
  }
}
