import { type BisectView, bisectView } from '../experiment/analysis/bisect.js';
import { metricUnit } from '../experiment/spec/metrics.js';
import type { MetricName } from '../experiment/spec/types.js';
import { formatBisect } from '../experiment/text/bisect-format.js';
import { bisectOfRun, bisectRoundRows } from '../store/bisect.js';
import type { Db } from '../store/db.js';
import { escapeHtml, markdownCodeBlock } from './escape.js';

/**
 * A `servelab bisect` answer beside the runs it concerns (each round's run, and the run it bisected): `show` prints
 * the text, `show --json` keeps the view, the report adds a section. One rendering (experiment/text/bisect-format.ts).
 */
export function storedBisect(db: Db, runId: number): { id: number; view: BisectView; text: string } | undefined {
  const bisect = bisectOfRun(db, runId);
  if (!bisect) return undefined;
  const view = bisectView(bisect.setup, bisectRoundRows(db, bisect));
  const labels = { current: `run ${bisect.currentRunId}`, reference: `run ${bisect.referenceRunId}`, unit: metricUnit(bisect.setup.metric as MetricName) };
  return { id: bisect.id, view, text: formatBisect(bisect.id, view, labels) };
}

/** The report's bisect section of a run, HTML and Markdown; empty for a run no bisect concerns. */
export function bisectReportParts(db: Db, runId: number): { html: string; markdown: string } {
  const bisect = storedBisect(db, runId);
  if (!bisect) return { html: '', markdown: '' };
  return {
    html: `\n<h2>Bisect ${bisect.id}</h2>\n<pre>${escapeHtml(bisect.text)}</pre>`,
    markdown: `\n## Bisect ${bisect.id}\n\n${markdownCodeBlock(bisect.text)}`,
  };
}
