import { formatNumber, formatSeconds, formatShare } from '../util/format.js';
import { figuresOf, SPECULATIVE_HEADER, speculativeCell } from './catalog.js';
import type { BenchProgress, BenchResult, CapacitySearch, LevelResult, SpecDecodeStats, Summary } from './types.js';

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** "p50/p99" of a latency summary, or "-" when nothing was measured. */
function pair(summary: Summary): string {
  if (summary.count === 0) return '-';
  const digits = summary.p99 >= 100 ? 0 : 1;
  return `${fixed(summary.median, digits)}/${fixed(summary.p99, digits)}`;
}

function specCell(level: LevelResult): string {
  return level.spec ? `${speculativeCell(figuresOf(level))}${tierText(level.spec.adaptiveTier)}` : '-';
}

/** SGLang's adaptive tier beside acceptance: " s3/d4" (draft steps / draft tokens at the level's end), "*" if it moved. */
function tierText(tier: SpecDecodeStats['adaptiveTier']): string {
  return tier ? ` s${tier.numSteps}/d${tier.numDraftTokens}${tier.changed ? '*' : ''}` : '';
}

const COLUMNS: Array<{ title: string; cell: (level: LevelResult) => string; left?: boolean }> = [
  { title: 'level', cell: (level) => level.label, left: true },
  { title: 'ok', cell: (level) => String(level.completed) },
  { title: 'fail', cell: (level) => String(level.failed) },
  { title: 'req/s', cell: (level) => fixed(level.requestsPerSecond, 2) },
  { title: 'out tok/s', cell: (level) => fixed(level.outputTokensPerSecond, 1) },
  { title: 'tok/s/stream', cell: (level) => (level.outputTokensPerSecondPerStream.count ? fixed(level.outputTokensPerSecondPerStream.median, 1) : '-') },
  { title: 'TTFT ms p50/p99', cell: (level) => pair(level.ttftMs) },
  { title: 'TPOT ms p50/p99', cell: (level) => pair(level.tpotMs) },
  { title: 'ITL ms p50/p99', cell: (level) => pair(level.itlMs) },
  { title: 'E2E ms p50/p99', cell: (level) => pair(level.e2eMs) },
  { title: 'goodput', cell: (level) => (level.goodput ? `${fixed(level.goodput.fraction * 100, 0)}%` : '-') },
  { title: SPECULATIVE_HEADER, cell: (level) => specCell(level) },
];

/** The terminal table of a benchmark result: one row per level, then error counts and notes. */
export function formatBenchTable(result: BenchResult): string {
  // Category rows follow their level, labelled "level · category".
  const rows = result.levels.flatMap((level) => [
    COLUMNS.map((column) => column.cell(level)),
    ...(level.categories ?? []).map((category) =>
      COLUMNS.map((column) => column.cell({ ...category, label: `${level.label} · ${category.category}`, samples: [] })),
    ),
  ]);
  const widths = COLUMNS.map((column, index) => Math.max(column.title.length, ...rows.map((row) => row[index]!.length)));
  const render = (cells: string[]) =>
    cells
      .map((cell, index) => (COLUMNS[index]!.left ? cell.padEnd(widths[index]!) : cell.padStart(widths[index]!)))
      .join('  ')
      .trimEnd();
  const lines = [
    `${result.baseUrl}  backend=${result.backend}${result.model ? `  model=${result.model}` : ''}  token counts: ${result.tokenCountMethod}`,
    render(COLUMNS.map((column) => column.title)),
    ...rows.map(render),
  ];
  for (const level of result.levels) {
    lines.push(...levelNotes(level));
    const errors = Object.entries(level.errorsByKind).map(([kind, count]) => `${kind} ${count}`);
    if (errors.length > 0) {
      const firstError = level.samples.find((sample) => sample.error && sample.error.kind !== 'aborted')?.error;
      lines.push(`errors ${level.label}: ${errors.join(', ')}${firstError ? ` (first: ${firstError.message})` : ''}`);
    }
  }
  const capacity = result.levels.find((level) => level.capacity)?.capacity;
  if (capacity) lines.push(...capacityLines(capacity));
  const specSources = [...new Set(result.levels.flatMap((level) => (level.spec ? [level.spec.source] : [])))];
  if (specSources.length > 0) lines.push(`spec decoding: acceptance rate / mean accepted length / decode ms per verify step from ${specSources.join('; ')}`);
  if (result.levels.some((level) => level.spec?.adaptiveTier)) {
    lines.push(
      'spec tier: sN/dM = the draft steps / draft tokens in force at the level end (sglang:spec_num_steps, spec_num_draft_tokens); * = it changed during the level',
    );
  }
  if (result.tokenCountMethod === 'stream-chunks')
    lines.push('note: the server reported no token usage; output tokens are counted stream events (spec decoding undercounts)');
  if (result.levels.some((level) => level.rate))
    lines.push("note: with --rate or a trace replay, TTFT and E2E count from each request's scheduled arrival (time queued in the client included)");
  if (result.interrupted) lines.push('INTERRUPTED: the figures cover only what was measured before the stop');
  return `${lines.join('\n')}\n`;
}

/**
 * "capacity: 6 in flight (c=7 missed the SLOs)" (or "≥ 32.0 req/s" when no step missed), then the bisection path and the search's notes: what `bench`
 * prints and what `show` and the report say of a capacity trial.
 */
export function capacityLines(search: CapacitySearch): string[] {
  // No step missed: the capacity is at least the highest level measured, not that level (the note says to raise max).
  const atLeast = search.upper === undefined && search.value > 0 ? '≥ ' : '';
  const value = capacityText(search.over, search.value);
  const above = search.steps.find((step) => step.at === search.upper);
  const bound = above ? ` (${above.label} missed the SLOs)` : '';
  const path = search.steps.map((step) => `${step.label} ${step.passed ? 'met' : `missed (${step.why})`}`).join(', ');
  return [`capacity: ${atLeast}${value}${bound}`, `capacity steps: ${path}`, ...search.notes.map((note) => `capacity note: ${note}`)];
}

/** "13.4 req/s" or "6 in flight": a level of a capacity search. */
export function capacityText(over: CapacitySearch['over'], value: number): string {
  return over === 'rate' ? `${formatNumber(value)} req/s` : `${value} in flight`;
}

/** A sent rate this far below the schedule's: the client fell behind (its own loop, or the in-flight cap). */
const BEHIND_SCHEDULE = 0.95;
/**
 * Completions this far below the arrival rate: the server could not keep up. Wider than the client's margin:
 * completion spacing also carries latency jitter, which a stable server shows too.
 */
const SERVER_BEHIND = 0.9;

/**
 * An open loop whose server fell behind its arrivals, in one wording for `bench`, the run log, `show` and the
 * report: "the server completed 5.85 req/s of the 20.0 scheduled: …"; undefined when it kept up. `arrivals` names
 * the rate compared with (the drawn schedule's where known, else the offered one).
 */
export function serverBehindLine(servedPerSecond: number, arrivalsPerSecond: number, arrivals: 'scheduled' | 'offered'): string | undefined {
  if (servedPerSecond >= SERVER_BEHIND * arrivalsPerSecond) return undefined;
  return `the server completed ${formatNumber(servedPerSecond)} req/s of the ${formatNumber(arrivalsPerSecond)} ${arrivals}: it is saturated, and latencies (counted from each scheduled arrival) grow with the length of the run`;
}

/** "early-stop: 16 of 40 tokens per request (40 requests stopped short)". */
export function earlyStopLine(output: NonNullable<LevelResult['outputLength']>): string {
  return `early-stop: ${formatNumber(output.generatedMean)} of ${formatNumber(output.requestedMean)} tokens per request (${output.shortRequests} requests stopped short)`;
}

/** "over-length: 40.0 of 20.0 tokens per request (16 requests over their max_tokens, counted by server-usage)". */
export function overLengthLine(output: NonNullable<LevelResult['outputLength']>, method?: string): string {
  const by = method === undefined ? '' : `, counted by ${method}`;
  return `over-length: ${formatNumber(output.generatedMean)} of ${formatNumber(output.requestedMean)} tokens per request (${output.overLengthRequests ?? 0} requests over their max_tokens${by})`;
}

/** "prefix cache: 34% of 51,200 prompt tokens cached (40 of 40 requests reported)". */
export function prefixCacheLine(check: NonNullable<LevelResult['prefixCache']>): string {
  const source = check.counters === undefined ? `${check.reporting} requests reported` : `server counters ${check.counters}`;
  const target = check.targetHitRate === undefined ? '' : ` (target ${formatShare(check.targetHitRate)})`;
  return `prefix cache: ${formatShare(check.hitRate)} of ${formatNumber(check.promptTokens)} prompt tokens cached${target} (${source})`;
}

/** "sessions: TTFT p50 by turn 1: 180 ms, 2: 40 ms, 3: 42 ms (16 sessions, 1 ended by a failed turn)". */
export function turnsLine(turns: NonNullable<LevelResult['turns']>): string {
  const byTurn = turns.ttftByTurn.map((entry) => `${entry.turn}: ${formatNumber(entry.p50Ms)} ms`).join(', ');
  const ended = turns.endedByFailure > 0 ? `, ${turns.endedByFailure} ended by a failed turn` : '';
  return `sessions: TTFT p50 by turn ${byTurn || 'none completed'} (${turns.sessions} sessions${ended})`;
}

/** "token counts disagree: server usage 2,560 output tokens, the stream 1,280 token events (16 of 16 requests)". */
export function tokenCountLine(counts: NonNullable<LevelResult['tokenCounts']>): string {
  const tokenizer = counts.tokenizer === undefined ? '' : `, the tokenizer ${formatNumber(counts.tokenizer)}`;
  return `token counts disagree: server usage ${formatNumber(counts.usage)} output tokens, the stream ${formatNumber(counts.stream)} token events${tokenizer} (${counts.disagreeing} of ${counts.checked} requests)`;
}

/**
 * "token events carried several tokens in 16 of 16 requests (1,920 tokens in 640 events, 3.00 per event): figures count
 * server-usage; ITL is the gap between events, TPOT per token".
 */
export function severalPerEventLine(counts: NonNullable<LevelResult['tokenCounts']>): string | undefined {
  const several = counts.severalPerEvent;
  if (!several) return undefined;
  const perEvent = several.events > 0 ? several.tokens / several.events : 0;
  return `token events carried several tokens in ${several.requests} of ${counts.checked} requests (${formatNumber(several.tokens)} tokens in ${formatNumber(several.events)} events, ${formatNumber(perEvent)} per event): figures count ${counts.method}; ITL is the gap between events, TPOT per token`;
}

/** What a level's row cannot show: unequal work, disagreeing counts, resends, an early stop, rate-mode honesty. */
export function levelNotes(level: LevelResult): string[] {
  const notes: string[] = [];
  const label = level.label;
  if (level.stopped !== undefined) notes.push(`STOPPED ${label}: ${level.stopped}`);
  if (level.outputLength && level.outputLength.shortRequests > 0) notes.push(`${earlyStopLine(level.outputLength)} at ${label}`);
  if (level.outputLength?.overLengthRequests) notes.push(`${overLengthLine(level.outputLength, level.tokenCounts?.method)} at ${label}`);
  const counts = level.tokenCounts;
  if (counts && counts.disagreeing > 0) {
    notes.push(`${tokenCountLine(counts)} at ${label}; figures use ${counts.method}${counts.trusted ? ' (trusted by choice)' : ''}`);
  }
  const several = counts && severalPerEventLine(counts);
  if (several) notes.push(`${several} at ${label}`);
  if (level.prefixCache) notes.push(`${prefixCacheLine(level.prefixCache)} at ${label}`);
  if (level.turns) notes.push(`${turnsLine(level.turns)} at ${label}`);
  if (level.resends) notes.push(`resends ${label}: ${level.resends} requests sent again after a kept-alive connection closed under them`);
  const rate = level.rate;
  if (rate) {
    const fromSend = level.ttftFromSendMs?.count
      ? `; TTFT p50 ${formatNumber(level.ttftMs.median)} ms from arrival, ${formatNumber(level.ttftFromSendMs.median)} ms from send`
      : '';
    notes.push(
      `rate ${label}: offered ${formatNumber(rate.offeredPerSecond)} req/s (schedule ${formatNumber(rate.scheduledPerSecond)}${rate.scheduledGapCv !== undefined ? `, gap CV ${formatNumber(rate.scheduledGapCv)}` : ''}), sent ${formatNumber(rate.sentPerSecond)}, served ${formatNumber(rate.servedPerSecond)}${fromSend}`,
    );
    if (rate.sentPerSecond < BEHIND_SCHEDULE * rate.scheduledPerSecond || rate.queuedByCap > 0) {
      const cap = rate.queuedByCap > 0 ? `; ${rate.queuedByCap} requests waited for the in-flight cap` : '';
      notes.push(`WARNING ${label}: the client fell behind its schedule (up to ${formatSeconds(rate.maxLagMs)} late${cap}): the offered load was not offered`);
    }
    const behind = serverBehindLine(rate.servedPerSecond, rate.scheduledPerSecond, 'scheduled');
    if (behind) notes.push(`WARNING ${label}: ${behind}`);
  }
  return notes;
}

const BAR_WIDTH = 24;

/** One progress line for stderr: bar, counts and live output throughput. */
export function formatProgress(progress: BenchProgress): string {
  const fraction = progress.total > 0 ? Math.min(1, (progress.completed + progress.failed) / progress.total) : 0;
  const filled = Math.round(fraction * BAR_WIDTH);
  const failed = progress.failed > 0 ? `  ${progress.failed} failed` : '';
  return `${progress.levelLabel.padEnd(14)} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${progress.completed + progress.failed}/${progress.total}${failed}  ${fixed(progress.outputTokensPerSecond, 0)} tok/s  ${fixed(progress.elapsedMs / 1000, 1)}s`;
}
