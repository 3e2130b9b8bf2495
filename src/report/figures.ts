/** The report's charts as SVG, rendered from the report model: shared by the HTML report and `servelab ui`. */

import { metricDef } from '../metrics/catalog.js';
import { type ChartSize, cdfChart, parameterChart, speedupChart, throughputChart, trialOrderChart } from './charts.js';
import type { RunReport } from './model.js';

export interface Figure {
  /** Stable name, e.g. "trials-0", "throughput", "speedup", "ttft-cdf", "e2e-cdf", "acceptance", "live-throughput-0". */
  id: string;
  title: string;
  svg: string;
}

export function reportFigures(report: RunReport, size: ChartSize = {}): Figure[] {
  const figures: Figure[] = report.trialOrder.map((entry, index) => ({
    id: `trials-${index}`,
    title: `Each trial in run order: ${entry.workload}`,
    svg: trialOrderChart(
      `${metricDef(entry.metric).header} per trial, ${entry.workload}`,
      metricDef(entry.metric).header,
      entry.series,
      entry.blocks,
      entry.total,
      size,
    ),
  }));
  if (report.throughput.series.length > 0) {
    figures.push({
      id: 'throughput',
      title: 'Median throughput per workload',
      svg: throughputChart(report.throughput.categories, report.throughput.series, size),
    });
  }
  // A capacity workload is judged on sloCapacity: its medians get their own chart, as tok/s does above.
  if (report.capacity.series.length > 0) {
    figures.push({
      id: 'slo-capacity',
      title: 'Median SLO capacity per capacity workload',
      svg: throughputChart(report.capacity.categories, report.capacity.series, {
        ...size,
        title: 'Median SLO capacity per capacity workload',
        yName: `${metricDef('sloCapacity').header} (${metricDef('sloCapacity').unit})`,
      }),
    });
  }
  if (report.speedup.length > 0) {
    figures.push({
      id: 'speedup',
      title: 'Change vs baseline',
      svg: speedupChart(report.speedup, { ...size, metric: report.metric, confidence: report.confidence }),
    });
  }
  if (report.latency && report.latency.ttft.length > 0) {
    figures.push({
      id: 'ttft-cdf',
      title: 'TTFT distribution',
      svg: cdfChart(`TTFT CDF · ${report.latency.workload}`, 'TTFT (ms)', report.latency.ttft, size),
    });
  }
  if (report.latency && report.latency.e2e.length > 0) {
    figures.push({
      id: 'e2e-cdf',
      title: 'End-to-end latency distribution',
      svg: cdfChart(`End-to-end latency CDF · ${report.latency.workload}`, 'e2e latency (ms)', report.latency.e2e, size),
    });
  }
  if (report.acceptance && report.acceptance.series.length > 0) {
    figures.push({
      id: 'acceptance',
      title: 'Acceptance rate',
      svg: parameterChart(`Acceptance rate vs ${report.acceptance.parameter}`, report.acceptance.parameter, 'acceptance rate', report.acceptance.series, {
        ...size,
        yMax: 1,
      }),
    });
  }
  return figures;
}
