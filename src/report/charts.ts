/**
 * Charts of the HTML report and `servelab ui`, rendered server-side to SVG strings with echarts SSR: no script,
 * no network, and the same pixels in a saved report and in the live page. Every function here is pure data → SVG.
 * echarts escapes the text it writes into the SVG, so stored names (variants, workloads) are safe to pass in.
 */
import * as echarts from 'echarts';
import { formatBlock, formatChange } from '../util/format.js';

export interface ChartSize {
  width?: number;
  height?: number;
}

/** One line of a chart: points are [x, y]; x is a number or a category name. */
export interface XYSeries {
  name: string;
  points: Array<[number | string, number]>;
  /** Draw markers only (independent measurements) instead of a connected line. */
  pointsOnly?: boolean;
}

export interface CdfSeries {
  name: string;
  values: number[];
}

export interface SpeedupBar {
  label: string;
  ratio: number;
  ciLow?: number;
  ciHigh?: number;
  /** faster / slower / no significant difference / insufficient data: picks the bar colour. */
  verdict: string;
}

/** Trial numbers (1-based run order) a block of the plan spans. */
export interface BlockSpan {
  block: number;
  from: number;
  to: number;
}

/** Colour-blind-safe palette (Okabe–Ito, reordered for contrast on white). */
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];
const VERDICT_COLOURS: Record<string, string> = { faster: '#1a7f37', slower: '#cf222e' };
const NEUTRAL = '#8c959f';
const TEXT = '#24292f';
const MUTED = '#57606a';
const GRID_LINE = '#eaeef2';
const FONT = '-apple-system, "Segoe UI", Helvetica, Arial, sans-serif';

/**
 * Median output tok/s per workload, one bar per variant. Workloads are categories (single-stream, c=8): a line
 * between them would draw a trend through values nobody measured.
 */
export function throughputChart(categories: string[], series: XYSeries[], options: ChartSize & { yName?: string; title?: string } = {}): string {
  return render(options, {
    ...base(
      options.title ?? 'Median throughput per workload',
      series.map((line) => line.name),
      options.width,
    ),
    xAxis: { ...axis('workload'), type: 'category', data: categories },
    yAxis: { ...axis(options.yName ?? 'output tok/s'), type: 'value', scale: false },
    series: series.map((line, index) => bars(line.name, line.points, index)),
  });
}

/**
 * Each trial's value at its run-order position (1-based, as every view numbers trials), coloured by variant, with
 * the plan's blocks shaded in turn: an outlier or a slow block is visible here, never in a median.
 */
export function trialOrderChart(title: string, yName: string, series: XYSeries[], blocks: BlockSpan[], total: number, options: ChartSize = {}): string {
  return render(options, {
    ...base(
      title,
      series.map((line) => line.name),
      options.width,
    ),
    xAxis: {
      ...axis('trial (run order)'),
      type: 'value',
      min: 0.5,
      max: total + 0.5,
      minInterval: 1,
      axisLabel: { color: MUTED, fontSize: 11, fontFamily: FONT, formatter: wholeOnly },
    },
    yAxis: { ...axis(yName), type: 'value', scale: true },
    series: series.map((line, index) => ({
      type: 'scatter',
      name: line.name,
      data: line.points,
      symbol: 'circle',
      symbolSize: 9,
      color: PALETTE[index % PALETTE.length],
      ...(index === 0 && {
        markArea: {
          silent: true,
          data: blocks.map((span, position) => [
            {
              xAxis: span.from - 0.5,
              name: formatBlock(span.block),
              itemStyle: { color: position % 2 === 0 ? '#f3f6f9' : '#ffffff' },
              // Above the plot: inside it, the label sat on the highest points.
              label: { position: 'top', distance: 2, color: MUTED, fontSize: 10, fontFamily: FONT },
            },
            { xAxis: span.to + 0.5 },
          ]),
        },
      }),
    })),
  });
}

/** Empirical CDF of a latency per variant (x: ms, y: fraction of requests at or below). */
export function cdfChart(title: string, unit: string, series: CdfSeries[], options: ChartSize = {}): string {
  return render(options, {
    ...base(
      title,
      series.map((entry) => entry.name),
      options.width,
    ),
    xAxis: { ...axis(unit), type: 'value', scale: true },
    yAxis: { ...axis('fraction ≤ x'), type: 'value', min: 0, max: 1 },
    series: series.map((line, index) => ({
      type: 'line',
      name: line.name,
      data: cdfPoints(line.values),
      step: 'end',
      showSymbol: false,
      lineStyle: { width: 2 },
      color: PALETTE[index % PALETTE.length],
    })),
  });
}

/**
 * Change vs baseline per variant (percent, the unit of every verdict table) with its confidence interval as error
 * bars and a reference line at 0 (the baseline); bar colours are the verdict badges' colours.
 */
export function speedupChart(changes: SpeedupBar[], options: ChartSize & { metric?: string; confidence?: number } = {}): string {
  const percent = (ratio: number): number => (ratio - 1) * 100;
  const bars = changes.map((bar) => ({
    ...bar,
    ratio: percent(bar.ratio),
    ...(bar.ciLow !== undefined && { ciLow: percent(bar.ciLow) }),
    ...(bar.ciHigh !== undefined && { ciHigh: percent(bar.ciHigh) }),
  }));
  const values = bars.flatMap((bar) => [bar.ratio, bar.ciLow ?? bar.ratio, bar.ciHigh ?? bar.ratio, 0]);
  const low = Math.min(...values);
  const high = Math.max(...values);
  const pad = Math.max((high - low) * 0.1, 1);
  // Long "variant · workload" labels collide when there are many bars: tilt them and make room below.
  const tilt = bars.length * Math.max(...bars.map((bar) => bar.label.length), 0) > 70;
  return render(options, {
    ...base(`Change vs baseline${options.metric ? ` (${options.metric})` : ''}, ${Math.round((options.confidence ?? 0.95) * 100)}% CI`, [], options.width),
    grid: { left: 64, right: 24, top: 52, bottom: tilt ? 86 : 48 },
    xAxis: {
      ...axis(''),
      type: 'category',
      data: bars.map((bar) => bar.label),
      axisLabel: { color: MUTED, interval: 0, fontSize: 11, fontFamily: FONT, rotate: tilt ? 32 : 0 },
    },
    yAxis: { ...axis('change vs baseline (%)'), type: 'value', min: floorTo(low - pad, 10), max: ceilTo(high + pad, 10) },
    series: [
      {
        type: 'bar',
        name: 'change',
        barMaxWidth: 48,
        data: bars.map((bar) => ({ value: bar.ratio, itemStyle: { color: VERDICT_COLOURS[bar.verdict] ?? NEUTRAL } })),
        label: {
          show: true,
          // Beside the bar: above it, the CI whisker ran through the text.
          position: 'right',
          color: TEXT,
          fontFamily: FONT,
          fontSize: 11,
          formatter: (p: { value: number }) => formatChange(1 + p.value / 100),
        },
        markLine: {
          silent: true,
          symbol: 'none',
          data: [{ yAxis: 0 }],
          lineStyle: { color: TEXT, type: 'dashed', width: 1 },
          label: { formatter: '0 = baseline', position: 'insideEndTop', color: MUTED, fontFamily: FONT, fontSize: 11 },
        },
      },
      {
        type: 'custom',
        name: 'CI',
        data: bars.flatMap((bar, index) => (bar.ciLow !== undefined && bar.ciHigh !== undefined ? [[index, bar.ciLow, bar.ciHigh]] : [])),
        renderItem: errorBar,
        z: 10,
      },
    ],
  });
}

/**
 * A metric (acceptance rate) against a sweep parameter (steps), one series per workload: lines over a numeric
 * parameter with at least 3 values, else bars per value (categories, or too few points for a line to mean anything).
 */
export function parameterChart(title: string, xName: string, yName: string, series: XYSeries[], options: ChartSize & { yMax?: number } = {}): string {
  const numeric = series.every((line) => line.points.every(([x]) => typeof x === 'number'));
  const xs = [...new Set(series.flatMap((line) => line.points.map(([x]) => x)))];
  const yAxis = { ...axis(yName), type: 'value', min: 0, ...(options.yMax !== undefined && { max: options.yMax }) };
  if (!numeric || xs.length < 3) {
    const categories = (numeric ? [...xs].sort((a, b) => Number(a) - Number(b)) : xs).map(String);
    return render(options, {
      ...base(
        title,
        series.map((line) => line.name),
        options.width,
      ),
      xAxis: { ...axis(xName), type: 'category', data: categories },
      yAxis,
      series: series.map((line, index) =>
        bars(
          line.name,
          line.points.map(([x, y]): [string, number] => [String(x), y]),
          index,
        ),
      ),
    });
  }
  return render(options, {
    ...base(
      title,
      series.map((line) => line.name),
      options.width,
    ),
    xAxis: { ...axis(xName), type: 'value', scale: true, minInterval: 1 },
    yAxis,
    series: series.map((line, index) => ({
      type: 'line',
      name: line.name,
      data: [...line.points].sort((a, b) => Number(a[0]) - Number(b[0])),
      symbol: 'circle',
      symbolSize: 7,
      lineStyle: { width: 2.5 },
      color: PALETTE[index % PALETTE.length],
    })),
  });
}

/** Bars of values (0–1) per draft position, one series per variant: per-position acceptance of speculative decoding. */
export function positionBarChart(title: string, series: Array<{ name: string; values: number[] }>, options: ChartSize = {}): string {
  const positions = Math.max(0, ...series.map((entry) => entry.values.length));
  return render(options, {
    ...base(
      title,
      series.map((entry) => entry.name),
      options.width,
    ),
    xAxis: { ...axis('draft position'), type: 'category', data: Array.from({ length: positions }, (_, index) => String(index + 1)) },
    yAxis: { ...axis('accepted share of drafts'), type: 'value', min: 0, max: 1 },
    series: series.map((entry, index) => ({
      type: 'bar',
      name: entry.name,
      barMaxWidth: 32,
      data: entry.values,
      itemStyle: { borderRadius: [3, 3, 0, 0] },
      color: PALETTE[index % PALETTE.length],
    })),
  });
}

/** A value over time (x: seconds since the run started), one line per series: the live charts of `servelab ui`. */
export function timelineChart(title: string, yName: string, series: XYSeries[], options: ChartSize = {}): string {
  return render(options, {
    ...base(
      title,
      series.map((entry) => entry.name),
      options.width,
    ),
    xAxis: { ...axis('s since start'), type: 'value', scale: true },
    yAxis: { ...axis(yName), type: 'value', min: 0 },
    series: series.map((line, index) => ({
      type: line.pointsOnly || line.points.length < 2 ? 'scatter' : 'line',
      name: line.name,
      data: line.points,
      symbol: 'circle',
      symbolSize: line.pointsOnly ? 8 : 5,
      lineStyle: { width: 2 },
      color: PALETTE[index % PALETTE.length],
    })),
  });
}

/** Sorted values paired with their cumulative fraction; long series are thinned to keep the SVG small. */
export function cdfPoints(values: number[], maxPoints = 400): Array<[number, number]> {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  const step = Math.max(1, Math.ceil(sorted.length / maxPoints));
  const points: Array<[number, number]> = [];
  for (let i = 0; i < sorted.length; i += step) points.push([sorted[i]!, (i + 1) / sorted.length]);
  if (sorted.length > 0 && points.at(-1)?.[1] !== 1) points.push([sorted.at(-1)!, 1]);
  return points;
}

interface RenderApi {
  value(dimension: number): number;
  coord(point: number[]): number[];
  size(point: number[]): number[];
}

function errorBar(_params: unknown, api: RenderApi): object {
  const x = api.value(0);
  const [cx, low] = api.coord([x, api.value(1)]) as [number, number];
  const [, high] = api.coord([x, api.value(2)]) as [number, number];
  const half = Math.min(10, (api.size([1, 0])[0] ?? 20) * 0.15);
  const style = { stroke: TEXT, lineWidth: 1.6 };
  return {
    type: 'group',
    children: [
      { type: 'line', shape: { x1: cx, y1: low, x2: cx, y2: high }, style },
      { type: 'line', shape: { x1: cx - half, y1: low, x2: cx + half, y2: low }, style },
      { type: 'line', shape: { x1: cx - half, y1: high, x2: cx + half, y2: high }, style },
    ],
  };
}

/**
 * Title on the first line, the legend on its own lines below it: side by side, a long title ran into the legend.
 * The legend wraps; the plot starts below as many legend lines as the names need (estimated from their length).
 */
function base(title: string, names: string[], width = 640): Record<string, unknown> {
  const legendWidth = names.reduce((sum, name) => sum + 30 + name.length * 6.5, 0);
  const legendLines = names.length === 0 ? 0 : Math.ceil(legendWidth / (width - 24));
  return {
    animation: false,
    backgroundColor: '#ffffff',
    textStyle: { fontFamily: FONT, color: TEXT },
    title: { text: title, left: 12, top: 8, textStyle: { fontSize: 14, fontWeight: 600, color: TEXT, fontFamily: FONT } },
    legend:
      names.length > 0
        ? { top: 32, left: 12, right: 12, type: 'plain', itemWidth: 16, itemHeight: 9, textStyle: { color: MUTED, fontSize: 11, fontFamily: FONT } }
        : { show: false },
    grid: { left: 64, right: 24, top: 44 + legendLines * 20 + 12, bottom: 48 },
  };
}

/** One bar series of categorical points, in the palette colour of its position. */
function bars(name: string, points: Array<[number | string, number]>, index: number): Record<string, unknown> {
  return { type: 'bar', name, data: points, barMaxWidth: 32, itemStyle: { borderRadius: [3, 3, 0, 0] }, color: PALETTE[index % PALETTE.length] };
}

/** Axis labels at whole trial numbers only (a value axis also ticks at halves when zoomed in). */
function wholeOnly(value: number): string {
  return Number.isInteger(value) ? String(value) : '';
}

function axis(name: string): Record<string, unknown> {
  return {
    name,
    nameLocation: 'middle',
    nameGap: 30,
    nameTextStyle: { color: MUTED, fontSize: 11, fontFamily: FONT },
    axisLine: { lineStyle: { color: '#d0d7de' } },
    axisTick: { lineStyle: { color: '#d0d7de' } },
    axisLabel: { color: MUTED, fontSize: 11, fontFamily: FONT },
    splitLine: { lineStyle: { color: GRID_LINE } },
  };
}

function render(size: ChartSize, option: Record<string, unknown>): string {
  const chart = echarts.init(null, null, { renderer: 'svg', ssr: true, width: size.width ?? 640, height: size.height ?? 340 });
  try {
    chart.setOption(option as echarts.EChartsOption);
    return chart.renderToSVGString();
  } finally {
    // An undisposed SSR chart keeps a timer alive and the process would not exit.
    chart.dispose();
  }
}

function floorTo(value: number, step: number): number {
  return Math.round(Math.floor(value / step) * step * 1000) / 1000;
}

function ceilTo(value: number, step: number): number {
  return Math.round(Math.ceil(value / step) * step * 1000) / 1000;
}

/** One cell of a heatmap: a measured value, or a cell with nothing measured or nothing valid in it. */
export interface HeatmapCell {
  x: number;
  y: number;
  state: 'measured' | 'unmeasured' | 'invalid';
  value?: number;
  /** A search's decision (search-summary.ts HeatCell.mark): the stated best (black border, ★), the leader where that is another point (black, ◆), as good (orange, ≈). */
  mark?: 'best' | 'leader' | 'as good';
}

/** The symbol a heatmap cell's mark is drawn with, in the chart and the Markdown table alike. */
export const HEAT_MARK_SYMBOL: Record<NonNullable<HeatmapCell['mark']>, string> = { best: '★', leader: '◆', 'as good': '≈' };

/**
 * A response surface: measured cells coloured by value (darker = better, whichever the objective's direction) and
 * labelled with it, cells with nothing measured white with a dot, cells no valid point reaches (a constraint) grey
 * with a cross. Values are text in the cells, so the picture reads without the colour scale.
 */
export function heatmapChart(
  title: string,
  axes: { x: string; xValues: string[]; y?: string; yValues: string[] },
  cells: readonly HeatmapCell[],
  options: ChartSize & { unit: string; higherIsBetter: boolean },
): string {
  const measured = cells.filter((cell) => cell.state === 'measured' && cell.value !== undefined);
  const values = measured.map((cell) => cell.value!);
  const [low, high] = values.length > 0 ? [Math.min(...values), Math.max(...values)] : [0, 1];
  const ramp = ['#f7fbff', '#c6dbef', '#6baed6', '#2171b5', '#08306b'];
  const dark = (value: number): boolean => {
    const position = high === low ? 1 : (value - low) / (high - low);
    return (options.higherIsBetter ? position : 1 - position) > 0.55;
  };
  const border = (mark: HeatmapCell['mark']): Record<string, unknown> =>
    mark === 'best' || mark === 'leader' ? { borderColor: '#000000', borderWidth: 3 } : mark === 'as good' ? { borderColor: '#E69F00', borderWidth: 3 } : {};
  const rows = axes.yValues.length;
  const height = options.height ?? Math.max(200, 44 + 30 + rows * 26 + 56);
  return render(
    { width: options.width ?? 640, height },
    {
      ...base(title, [], options.width),
      grid: { left: axes.y === undefined ? 24 : 64, right: 96, top: 44, bottom: 56 },
      tooltip: { show: false },
      xAxis: { ...axis(axes.x), type: 'category', data: axes.xValues, splitArea: { show: false }, splitLine: { show: false } },
      yAxis: {
        ...axis(axes.y ?? ''),
        type: 'category',
        data: axes.yValues,
        splitLine: { show: false },
        ...(axes.y === undefined && { axisLabel: { show: false }, axisTick: { show: false } }),
      },
      visualMap: [
        {
          type: 'continuous',
          seriesIndex: 0,
          min: low,
          max: high,
          calculable: false,
          orient: 'vertical',
          right: 8,
          top: 'middle',
          itemHeight: Math.min(140, Math.max(60, rows * 26 - 20)),
          text: [formatCompact(high), formatCompact(low)],
          textStyle: { color: MUTED, fontSize: 10, fontFamily: FONT },
          inRange: { color: options.higherIsBetter ? ramp : [...ramp].reverse() },
        },
        {
          type: 'piecewise',
          show: false,
          seriesIndex: 1,
          pieces: [
            { value: 1, color: '#ffffff' },
            { value: 2, color: '#d0d7de' },
          ],
        },
      ],
      series: [
        {
          type: 'heatmap',
          name: options.unit,
          data: measured.map((cell) => ({
            value: [cell.x, cell.y, cell.value],
            itemStyle: { borderColor: '#ffffff', borderWidth: 1, ...border(cell.mark) },
            label: {
              show: true,
              fontSize: 9,
              fontFamily: FONT,
              color: dark(cell.value!) ? '#ffffff' : TEXT,
              formatter: `${cell.mark ? HEAT_MARK_SYMBOL[cell.mark] : ''}${formatCompact(cell.value!)}`,
            },
          })),
        },
        {
          // Cells without a value: 1 = nothing measured (white, a dot), 2 = no valid point (grey, a cross).
          type: 'heatmap',
          name: 'no value',
          data: cells
            .filter((cell) => cell.state !== 'measured')
            .map((cell) => ({
              value: [cell.x, cell.y, cell.state === 'invalid' ? 2 : 1],
              label: { show: true, formatter: cell.state === 'invalid' ? '×' : '·', color: MUTED, fontSize: 10 },
            })),
          itemStyle: { borderColor: GRID_LINE, borderWidth: 1 },
        },
      ],
    },
  );
}

/** 3,323 → "3.32k", 512.4 → "512", 0.0123 → "0.0123": short enough for a cell. */
function formatCompact(value: number): string {
  const magnitude = Math.abs(value);
  if (magnitude >= 1000) return `${Number((value / 1000).toPrecision(3))}k`;
  return String(Number(value.toPrecision(3)));
}
