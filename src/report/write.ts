/** `servelab report`: render runs of the store to HTML + Markdown files. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Db } from '../store/db.js';
import { UserError } from '../util/errors.js';
import { reportFigures } from './figures.js';
import { renderHtmlReport } from './html.js';
import { renderMarkdown } from './markdown.js';
import { buildRunReport, compareRuns, type RunData } from './model.js';
import { latestRunId, loadRunData } from './queries.js';
import { ExitCode } from '../util/exit.js';

export interface WrittenReport {
  runId: number;
  html: string;
  markdown: string;
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
    const previous = runs.slice(0, index).reverse().find((candidate) => candidate.run.experimentName === data.run.experimentName);
    return writeOne(data, previous, dir);
  });
}

function writeOne(data: RunData, previous: RunData | undefined, dir: string): WrittenReport {
  const report = buildRunReport(data);
  const html = join(dir, `run-${data.run.id}.html`);
  const markdown = join(dir, `run-${data.run.id}.md`);
  writeFileSync(html, renderHtmlReport(report, reportFigures(report), previous && compareRuns(previous, data)));
  writeFileSync(markdown, renderMarkdown(report));
  return { runId: data.run.id, html, markdown };
}
