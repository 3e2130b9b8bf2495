import type { Command } from 'commander';
import { writeReports } from '../../report/write.js';
import { defaultStorePath } from '../../store/db.js';
import { openStoreForReading } from '../../store/reads.js';
import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';

interface ReportFlags {
  out: string;
  store?: string;
  json?: boolean;
}

export function registerReport(program: Command): void {
  program
    .command('report')
    .description('write a self-contained HTML report (inline SVG charts) and a Markdown summary per run')
    .argument('[runs...]', 'run ids (default: the latest run)')
    .option('--out <dir>', 'output directory', 'servelab-report')
    .option('--store <path>', 'result store (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .option('--json', 'print the written files as JSON on stdout')
    .action((runs: string[], flags: ReportFlags) => {
      const runIds = runs.map(parseRunId);
      const db = openStoreForReading(defaultStorePath(flags.store));
      try {
        const written = writeReports(db, runIds, flags.out);
        if (flags.json) process.stdout.write(`${JSON.stringify(written, null, 2)}\n`);
        else
          for (const file of written)
            process.stdout.write(`run ${file.runId}: ${file.html}\n        ${file.markdown}\n${file.schedule ? `        ${file.schedule}\n` : ''}`);
      } finally {
        db.close();
      }
    });
}

function parseRunId(text: string): number {
  const id = Number(text);
  if (!Number.isInteger(id) || id <= 0) throw new UserError(`run id must be a positive integer, got "${text}"`, 'list runs with `servelab ls`', ExitCode.usage);
  return id;
}
