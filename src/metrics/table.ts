import type { BenchProgress, BenchResult, LevelResult, Summary } from './types.js';

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
  const spec = level.spec;
  if (!spec) return '-';
  const rate = spec.acceptanceRate === undefined ? '-' : `${fixed(spec.acceptanceRate * 100, 0)}%`;
  const length = spec.meanAcceptedLength === undefined ? '-' : fixed(spec.meanAcceptedLength, 2);
  return `${rate}/${length}`;
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
  { title: 'spec acc/len', cell: (level) => specCell(level) },
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
    const errors = Object.entries(level.errorsByKind).map(([kind, count]) => `${kind} ${count}`);
    if (errors.length > 0) {
      const firstError = level.samples.find((sample) => sample.error && sample.error.kind !== 'aborted')?.error;
      lines.push(`errors ${level.label}: ${errors.join(', ')}${firstError ? ` (first: ${firstError.message})` : ''}`);
    }
  }
  const specSources = [...new Set(result.levels.flatMap((level) => (level.spec ? [level.spec.source] : [])))];
  if (specSources.length > 0) lines.push(`spec decoding: acceptance rate / mean accepted length from ${specSources.join('; ')}`);
  if (result.tokenCountMethod === 'stream-chunks')
    lines.push('note: the server reported no token usage; output tokens are counted stream events (spec decoding undercounts)');
  if (result.interrupted) lines.push('INTERRUPTED: the figures cover only what was measured before the stop');
  return `${lines.join('\n')}\n`;
}

const BAR_WIDTH = 24;

/** One progress line for stderr: bar, counts and live output throughput. */
export function formatProgress(progress: BenchProgress): string {
  const fraction = progress.total > 0 ? Math.min(1, (progress.completed + progress.failed) / progress.total) : 0;
  const filled = Math.round(fraction * BAR_WIDTH);
  const failed = progress.failed > 0 ? `  ${progress.failed} failed` : '';
  return `${progress.levelLabel.padEnd(14)} [${'#'.repeat(filled)}${'.'.repeat(BAR_WIDTH - filled)}] ${progress.completed + progress.failed}/${progress.total}${failed}  ${fixed(progress.outputTokensPerSecond, 0)} tok/s  ${fixed(progress.elapsedMs / 1000, 1)}s`;
}
