/**
 * Charts of the HTML report and `servelab ui`, rendered server-side to SVG strings with echarts SSR: no script,
 * no network, and the same pixels in a saved report and in the live page. Every function here is pure data → SVG.
 * echarts escapes the text it writes into the SVG, so stored names (variants, workloads) are safe to pass in.
 */
import * as echarts from 'echarts';

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

/** Colour-blind-safe palette (Okabe–Ito, reordered for contrast on white). */
export const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#000000'];
const VERDICT_COLOURS: Record<string, string> = { faster: '#1a7f37', slower: '#cf222e' };
const NEUTRAL = '#8c959f';
const TEXT = '#24292f';
const MUTED = '#57606a';
const GRID_LINE = '#eaeef2';
const FONT = '-apple-system, "Segoe UI", Helvetica, Arial, sans-serif';

/** Median output tok/s per workload level, one line per variant; x is a category (workload labels in order). */
export function throughputChart(categories: string[], series: XYSeries[], options: ChartSize & { yName?: string; title?: string } = {}): string {
  return render(options, {
    ...base(options.title ?? 'Throughput vs concurrency', series.length),
    xAxis: { ...axis('workload'), type: 'category', data: categories, boundaryGap: categories.length === 1 },
    yAxis: { ...axis(options.yName ?? 'output tok/s'), type: 'value', scale: false },
    series: series.map((line, index) => ({
      type: 'line',
      name: line.name,
      data: line.points,
      symbol: 'circle',
      symbolSize: 7,
      lineStyle: { width: 2.5 },
      color: PALETTE[index % PALETTE.length],
    })),
  });
}

/** Empirical CDF of a latency per variant (x: ms, y: fraction of requests at or below). */
export function cdfChart(title: string, unit: string, series: CdfSeries[], options: ChartSize = {}): string {
  return render(options, {
    ...base(title, series.length),
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

/** Ratio vs baseline per variant with its confidence interval as error bars and a reference line at 1. */
export function speedupChart(bars: SpeedupBar[], options: ChartSize & { metric?: string; confidence?: number } = {}): string {
  const values = bars.flatMap((bar) => [bar.ratio, bar.ciLow ?? bar.ratio, bar.ciHigh ?? bar.ratio, 1]);
  const low = Math.min(...values);
  const high = Math.max(...values);
  const pad = Math.max((high - low) * 0.1, 0.02);
  // Long "variant · workload" labels collide when there are many bars: tilt them and make room below.
  const tilt = bars.length * Math.max(...bars.map((bar) => bar.label.length), 0) > 70;
  return render(options, {
    ...base(`Ratio vs baseline${options.metric ? ` (${options.metric})` : ''}, ${Math.round((options.confidence ?? 0.95) * 100)}% CI`, 0),
    grid: { left: 64, right: 24, top: 52, bottom: tilt ? 86 : 48 },
    xAxis: {
      ...axis(''),
      type: 'category',
      data: bars.map((bar) => bar.label),
      axisLabel: { color: MUTED, interval: 0, fontSize: 11, fontFamily: FONT, rotate: tilt ? 32 : 0 },
    },
    yAxis: { ...axis('ratio'), type: 'value', min: floorTo(Math.max(0, low - pad), 0.1), max: ceilTo(high + pad, 0.1) },
    series: [
      {
        type: 'bar',
        name: 'ratio',
        barMaxWidth: 48,
        data: bars.map((bar) => ({ value: bar.ratio, itemStyle: { color: VERDICT_COLOURS[bar.verdict] ?? NEUTRAL, borderRadius: [3, 3, 0, 0] } })),
        label: {
          show: true,
          position: 'insideBottom',
          color: '#fff',
          fontFamily: FONT,
          fontSize: 11,
          formatter: (p: { value: number }) => `${p.value.toFixed(3)}×`,
        },
        markLine: {
          silent: true,
          symbol: 'none',
          data: [{ yAxis: 1 }],
          lineStyle: { color: TEXT, type: 'dashed', width: 1 },
          label: { formatter: '1.0 = baseline', position: 'insideEndTop', color: MUTED, fontFamily: FONT, fontSize: 11 },
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

/** A metric (acceptance rate) against a numeric sweep parameter (steps), one line per workload. */
export function parameterChart(title: string, xName: string, yName: string, series: XYSeries[], options: ChartSize & { yMax?: number } = {}): string {
  const numeric = series.every((line) => line.points.every(([x]) => typeof x === 'number'));
  const categories = numeric ? [] : [...new Set(series.flatMap((line) => line.points.map(([x]) => String(x))))];
  return render(options, {
    ...base(title, series.length),
    xAxis: numeric ? { ...axis(xName), type: 'value', scale: true, minInterval: 1 } : { ...axis(xName), type: 'category', data: categories },
    yAxis: { ...axis(yName), type: 'value', min: 0, ...(options.yMax !== undefined && { max: options.yMax }) },
    series: series.map((line, index) => ({
      type: 'line',
      name: line.name,
      data: numeric ? [...line.points].sort((a, b) => Number(a[0]) - Number(b[0])) : line.points,
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
    ...base(title, series.length),
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
    ...base(title, series.length),
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

function base(title: string, seriesCount: number): Record<string, unknown> {
  return {
    animation: false,
    backgroundColor: '#ffffff',
    textStyle: { fontFamily: FONT, color: TEXT },
    title: { text: title, left: 12, top: 8, textStyle: { fontSize: 14, fontWeight: 600, color: TEXT, fontFamily: FONT } },
    legend:
      seriesCount > 0
        ? { top: 8, right: 12, type: 'plain', itemWidth: 16, itemHeight: 9, textStyle: { color: MUTED, fontSize: 11, fontFamily: FONT } }
        : { show: false },
    grid: { left: 64, right: 24, top: seriesCount > 3 ? 72 : 52, bottom: 48 },
  };
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
