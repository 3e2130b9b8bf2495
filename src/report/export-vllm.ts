/**
 * A run as vLLM `bench serve` result objects, so dashboards that read those files read servelab runs. The keys are
 * vLLM's (vllm-project/vllm, vllm/benchmarks/serve.py at 009e6d4a: `benchmark()` builds `result = {...}` from
 * "duration" to "max_concurrent_requests" and adds mean_/median_/std_/pNN_ keys per metric in
 * `process_one_metric`; `main_async()` puts "date", "endpoint_type", "backend", "label", "model_id",
 * "tokenizer_id", "num_prompts", --metadata KEY=VALUE pairs, "request_rate", "burstiness", "max_concurrency" first.
 * Line numbers of the same code in an earlier copy, igor-susic1/vllm-bench-standalone vllm/benchmarks/serve.py:
 * result dict 788-806, metric keys 846-858, result_json 1442-1470, --append-result's newline 1516-1518.)
 *
 * One object per variant and workload level: its counted trials as one benchmark. Counts and token totals are
 * summed over their requests, "duration" is the sum of the trials' measured wall times, throughputs are totals over
 * that duration (vLLM's definitions), and latency statistics pool every completed request. servelab's own per-trial
 * figures and verdicts use medians over trials; `servelab_*` keys (vLLM's place for --metadata) say what was pooled.
 * vLLM writes a file per benchmark and, with --append-result, one object per line: `vllmBenchLines` does the latter.
 */
import { standardDeviation } from 'simple-statistics';
import { storedExperimentOf } from '../experiment/spec/stored.js';
import type { ResolvedVariant, ResolvedWorkload } from '../experiment/spec/types.js';
import { meetsSlo, summarize } from '../metrics/summary.js';
import type { RequestSample } from '../metrics/types.js';
import { BUILTIN_PROFILES } from '../profiles/builtin.js';
import type { ExportData } from './queries.js';

export type VllmBenchResult = Record<string, unknown>;

/** vLLM's default --metric-percentiles is "99": only p99_* keys. */
const PERCENTILES = [99] as const;

export function vllmBenchResults(data: Pick<ExportData, 'run' | 'trials' | 'samples'>, options: { detailed: boolean }): VllmBenchResult[] {
  const experiment = storedExperimentOf(data.run);
  const variants = [...new Set([...(experiment.variants ?? []).map((variant) => variant.name), ...data.trials.map((trial) => trial.variant)])];
  const workloads = [...new Set([...(experiment.workloads ?? []).map((workload) => workload.label), ...data.trials.map((trial) => trial.workload)])];
  const results: VllmBenchResult[] = [];
  for (const variantName of variants) {
    for (const workloadLabel of workloads) {
      const trials = data.trials.filter((trial) => trial.variant === variantName && trial.workload === workloadLabel);
      if (trials.length === 0) continue;
      // A trial whose readable requests are not the ones its figures counted (a sample row was unreadable) would
      // make the pooled totals wrong: it is left out, by id.
      const counted = trials.filter((trial) => (data.samples.get(trial.id) ?? []).filter((sample) => !sample.error).length === trial.metrics.completed);
      const leftOut = trials.filter((trial) => !counted.includes(trial)).map((trial) => trial.id);
      const variant = experiment.variants?.find((candidate) => candidate.name === variantName) as ResolvedVariant | undefined;
      const workload = experiment.workloads?.find((candidate) => candidate.label === workloadLabel) as ResolvedWorkload | undefined;
      const samples = counted.flatMap((trial) => data.samples.get(trial.id) ?? []);
      // Each trial's level wall time, exactly as its figures were computed (requestsPerSecond = completed / duration).
      const durations = counted.map((trial) => (trial.metrics.requestsPerSecond ? trial.metrics.completed / trial.metrics.requestsPerSecond : Number.NaN));
      const duration = durations.length > 0 && durations.every(Number.isFinite) ? durations.reduce((sum, value) => sum + value, 0) : null;
      results.push({
        ...setup(data.run.id, variant, workload, counted[0]?.startedAt ?? trials[0]!.startedAt, samples.length),
        servelab_run_id: data.run.id,
        servelab_variant: variantName,
        servelab_workload: workloadLabel,
        servelab_trial_ids: counted.map((trial) => trial.id),
        ...(leftOut.length > 0 && { servelab_trials_left_out: leftOut }),
        servelab_aggregation: 'counts and tokens summed over the trials, duration = sum of trial wall times, latencies pooled over completed requests',
        ...(workload?.workload.kind === 'rate' && {
          servelab_note: 'ttft and e2el are timed from each request’s scheduled arrival (client queueing included), not from its send',
        }),
        ...traffic(workload),
        ...benchmark(samples, duration, variant?.client?.slo, options.detailed),
      });
    }
  }
  return results;
}

/** One object per line, as `vllm bench serve --append-result` writes them. */
export function vllmBenchLines(results: readonly VllmBenchResult[]): string {
  return results.map((result) => `${JSON.stringify(result)}\n`).join('');
}

function setup(
  runId: number,
  variant: ResolvedVariant | undefined,
  workload: ResolvedWorkload | undefined,
  startedAt: string,
  requests: number,
): VllmBenchResult {
  const model = variant?.client?.model ?? variant?.server?.model ?? null;
  // servelab's name of the wire format (openai-completions, openai-chat, …): the client's, else the profile's default.
  const backend = variant?.client?.backend ?? (variant ? BUILTIN_PROFILES[variant.server?.profile]?.defaultBackend : undefined) ?? null;
  return {
    // vLLM: local time "%Y%m%d-%H%M%S" of the save; here the first counted trial's start, UTC.
    date: startedAt.replace(/[-:]/g, '').replace('T', '-').slice(0, 15),
    endpoint_type: backend,
    backend,
    label: `run${runId}-${variant?.name ?? 'unknown'}-${workload?.label ?? 'unknown'}`,
    model_id: model,
    tokenizer_id: variant?.client?.tokenizerPath ?? model,
    num_prompts: requests,
  };
}

function traffic(workload: ResolvedWorkload | undefined): VllmBenchResult {
  const spec = workload?.workload;
  if (spec?.kind === 'rate')
    // vLLM's burstiness 1.0 is Poisson arrivals; evenly spaced arrivals have no burstiness value there.
    return { request_rate: spec.requestsPerSecond, burstiness: spec.arrival === 'poisson' ? 1 : null, max_concurrency: spec.maxInFlight };
  return { request_rate: 'inf', burstiness: 1, max_concurrency: workload?.concurrency ?? null };
}

function benchmark(samples: readonly RequestSample[], duration: number | null, slo: ResolvedVariant['client']['slo'], detailed: boolean): VllmBenchResult {
  const completed = samples.filter((sample) => !sample.error);
  // As summarizeLevel: a request aborted by the user is not a server failure.
  const failed = samples.filter((sample) => sample.error && sample.error.kind !== 'aborted').length;
  const inputTokens = completed.reduce((sum, sample) => sum + sample.inputTokens, 0);
  const outputTokens = completed.reduce((sum, sample) => sum + sample.outputTokens, 0);
  const perSecond = (count: number): number | null => (duration !== null && duration > 0 ? count / duration : null);
  const defined = (values: Array<number | undefined>): number[] => values.filter((value): value is number => value !== undefined);
  return {
    duration,
    completed: completed.length,
    failed,
    total_input_tokens: inputTokens,
    total_output_tokens: outputTokens,
    request_throughput: perSecond(completed.length),
    request_goodput:
      slo && (slo.ttftMs !== undefined || slo.tpotMs !== undefined || slo.e2eMs !== undefined)
        ? perSecond(completed.filter((sample) => meetsSlo(sample, slo)).length)
        : null,
    output_throughput: perSecond(outputTokens),
    total_token_throughput: perSecond(inputTokens + outputTokens),
    ...(detailed && {
      // vLLM's per-request lists (--save-detailed): seconds, and 0 / "" for a failed request as vLLM records it.
      input_lens: samples.map((sample) => sample.inputTokens),
      output_lens: samples.map((sample) => (sample.error ? 0 : sample.outputTokens)),
      ttfts: samples.map((sample) => (sample.error ? 0 : (sample.ttftMs ?? 0) / 1000)),
      itls: samples.map((sample) => (sample.error ? [] : sample.itlMs.map((gap) => gap / 1000))),
      latencies: samples.map((sample) => (sample.error ? 0 : (sample.e2eMs ?? 0) / 1000)),
      start_times: samples.map((sample) => sample.sentAtMs / 1000),
      errors: samples.map((sample) => (sample.error ? `${sample.error.kind}: ${sample.error.message}` : '')),
    }),
    ...statistics('ttft', defined(completed.map((sample) => sample.ttftMs))),
    ...statistics('tpot', defined(completed.map((sample) => sample.tpotMs))),
    ...statistics(
      'itl',
      completed.flatMap((sample) => sample.itlMs),
    ),
    ...statistics('e2el', defined(completed.map((sample) => sample.e2eMs))),
  };
}

/** mean/median/std (numpy's: population)/pNN in ms; quantiles interpolate as numpy's percentile does (summarize). Null without values, where vLLM prints 0. */
function statistics(name: string, values: readonly number[]): VllmBenchResult {
  const summary = values.length > 0 ? summarize(values) : undefined;
  return {
    [`mean_${name}_ms`]: summary?.mean ?? null,
    [`median_${name}_ms`]: summary?.median ?? null,
    [`std_${name}_ms`]: summary ? standardDeviation([...values]) : null,
    ...Object.fromEntries(PERCENTILES.map((p) => [`p${p}_${name}_ms`, summary ? summary[`p${p}`] : null])),
  };
}
