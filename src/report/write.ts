/** `servelab report`: render runs of the store to HTML + Markdown files. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { measuredOnly } from '../experiment/analysis/search.js';
import { scheduleFileName, speculativeSchedule } from '../experiment/analysis/spec-schedule.js';
import { storedExperimentOf } from '../experiment/spec/stored.js';
import { formatAccuracy } from '../experiment/text/accuracy-format.js';
import { formatBestVerdict, formatSpecView, hasSpecFigures } from '../experiment/text/best-format.js';
import { formatEquivalence } from '../experiment/text/equivalence-format.js';
import type { Db } from '../store/db.js';
import { latestRunId } from '../store/reads.js';
import { listSearchSteps } from '../store/search.js';
import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { accuracyHtml } from './accuracy-html.js';
import { bisectReportParts } from './bisect.js';
import { bestConfigHtml, campaignFigures, specTableHtml } from './campaign-html.js';
import { compareRuns } from './compare.js';
import { equivalenceHtml } from './equivalence-html.js';
import { markdownCodeBlock } from './escape.js';
import { type Figure, reportFigures } from './figures.js';
import { renderHtmlReport } from './html.js';
import { laneReportParts } from './lanes.js';
import { renderMarkdown } from './markdown.js';
import { buildRunReport, type RunData } from './model.js';
import { loadRunData } from './queries.js';
import { searchReportParts } from './search.js';

export interface WrittenReport {
  runId: number;
  html: string;
  markdown: string;
  /** A search's per-level best speculative depths as the engine's schedule file (analysis/spec-schedule.ts). */
  schedule?: string;
}

/**
 * One HTML and one Markdown file per run (run-<id>.html / .md). Without run ids, the latest run. When several runs
 * of one experiment are given, each is also compared with the previous one given (environment diff, drift check).
 */
export function writeReports(db: Db, runIds: number[], outDir: string): WrittenReport[] {
  const ids = runIds.length > 0 ? runIds : [latestRunId(db)].filter((id) => id !== undefined);
  if (ids.length === 0) throw new UserError('the store has no runs yet', 'run an experiment first (`servelab run FILE`), or pass --store PATH');
  const runs = ids.map((id) => {
    const data = loadRunData(db, id);
    if (!data) throw new UserError(`run ${id} is not in the store`, 'list runs with `servelab ls` (and check --store)', ExitCode.usage);
    return data;
  });
  const dir = resolve(outDir);
  mkdirSync(dir, { recursive: true });
  return runs.map((data, index) => {
    const previous = runs
      .slice(0, index)
      .reverse()
      .find((candidate) => candidate.run.experimentName === data.run.experimentName);
    const campaign = campaignOf(data);
    const bisect = bisectReportParts(db, data.run.id);
    const lanes = laneReportParts(data.conclusion?.lanes);
    // A search's answer and response surface lead the campaign sections, as in `show`.
    const search = searchReportParts(data.conclusion?.search);
    const written = writeOne(data, previous, dir, {
      ...campaign,
      html: search.html + (campaign.html ?? '') + lanes.html + bisect.html,
      markdown: search.markdown + campaign.markdown + lanes.markdown + bisect.markdown,
    });
    const schedule = speculativeSchedule(storedExperimentOf(data.run), listSearchSteps(db, data.run.id));
    if (!schedule || 'none' in schedule) return written;
    const file = join(dir, scheduleFileName(data.run.id, schedule.schedule.engine));
    writeFileSync(file, `${JSON.stringify(schedule.schedule.content, null, 2)}\n`);
    return { ...written, schedule: file };
  });
}

interface CampaignParts {
  html?: string;
  figures: Figure[];
  markdown: string;
}

/**
 * The conclusion's best-config verdict, quality sections and campaign charts; a single-variant run has no best config
 * to name, and a search's answer is its own section (./search.ts).
 */
function campaignOf(data: RunData): CampaignParts {
  // A search's spec table and charts: its measured points only.
  const experiment = measuredOnly(storedExperimentOf(data.run), data.trials);
  const { best, search, equivalence, accuracy } = data.conclusion ?? {};
  if (!best && !search) return { figures: [], markdown: '' };
  return {
    html:
      (best ? `<h2>Best config</h2>\n${bestConfigHtml(experiment, best)}` : '') +
      (equivalence ? `\n${equivalenceHtml(equivalence)}` : '') +
      (accuracy ? `\n${accuracyHtml(accuracy)}` : '') +
      (hasSpecFigures(data.trials) ? `\n<h2>Speculative decoding</h2>${specTableHtml(experiment, data.trials)}` : ''),
    figures: best ? campaignFigures(experiment, best, data.trials) : [],
    markdown:
      (best ? `\n## Best config\n\n${markdownCodeBlock(formatBestVerdict(experiment, best))}` : '') +
      (equivalence ? `\n## Output equivalence\n\n${markdownCodeBlock(formatEquivalence(equivalence))}` : '') +
      (accuracy ? `\n## Accuracy\n\n${markdownCodeBlock(formatAccuracy(accuracy))}` : '') +
      (hasSpecFigures(data.trials) ? `\n## Speculative decoding\n\n${markdownCodeBlock(formatSpecView(experiment, data.trials))}` : ''),
  };
}

function writeOne(data: RunData, previous: RunData | undefined, dir: string, campaign: CampaignParts): WrittenReport {
  const report = buildRunReport(data);
  const html = join(dir, `run-${data.run.id}.html`);
  const markdown = join(dir, `run-${data.run.id}.md`);
  // The store keeps secrets redacted already; stores written before redaction existed are covered where each stored
  // text is escaped (./escape.ts), not by a pass over the page, which would leave its markers as raw tags.
  writeFileSync(html, renderHtmlReport(report, [...reportFigures(report), ...campaign.figures], previous && compareRuns(previous, data), campaign.html));
  writeFileSync(markdown, renderMarkdown(report) + campaign.markdown);
  return { runId: data.run.id, html, markdown };
}
