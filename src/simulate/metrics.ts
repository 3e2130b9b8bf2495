/** vLLM-style Prometheus counters, so spec-decoding scrapers can be tested against the simulator. */
export class SimMetrics {
  promptTokens = 0;
  generationTokens = 0;
  requestsFinished = 0;
  specDrafts = 0;
  specDraftTokens = 0;
  specAcceptedTokens = 0;

  recordStep(draftTokens: number, acceptedTokens: number): void {
    if (draftTokens === 0) return;
    this.specDrafts += 1;
    this.specDraftTokens += draftTokens;
    this.specAcceptedTokens += acceptedTokens;
  }

  /** Prometheus text exposition, with the gauges passed in because the scheduler owns them. */
  render(model: string, running: number, waiting: number): string {
    const labels = `{model_name="${model.replace(/["\\]/g, '\\$&')}"}`;
    const lines: string[] = [];
    const add = (name: string, type: 'gauge' | 'counter', help: string, value: number): void => {
      const sample = type === 'counter' ? `${name}_total` : name;
      lines.push(`# HELP ${sample} ${help}`, `# TYPE ${sample} ${type}`, `${sample}${labels} ${value.toFixed(1)}`);
    };
    add('vllm:num_requests_running', 'gauge', 'Number of requests in model execution batches.', running);
    add('vllm:num_requests_waiting', 'gauge', 'Number of requests waiting to be processed.', waiting);
    add('vllm:prompt_tokens', 'counter', 'Number of prefill tokens processed.', this.promptTokens);
    add('vllm:generation_tokens', 'counter', 'Number of generation tokens processed.', this.generationTokens);
    add('vllm:request_success', 'counter', 'Count of successfully processed requests.', this.requestsFinished);
    add('vllm:spec_decode_num_drafts', 'counter', 'Number of spec decoding drafts.', this.specDrafts);
    add('vllm:spec_decode_num_draft_tokens', 'counter', 'Number of draft tokens.', this.specDraftTokens);
    add('vllm:spec_decode_num_accepted_tokens', 'counter', 'Number of accepted tokens.', this.specAcceptedTokens);
    return `${lines.join('\n')}\n`;
  }
}
