import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { EXPORT_FORMATS, EXPORT_LEVELS, type ExportFormat, exportRun } from '../../report/export.js';
import type { ExportLevel } from '../../report/export-table.js';
import { defaultStorePath } from '../../store/db.js';
import { openStoreForReading } from '../../store/reads.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';

interface ExportFlags {
  format: string;
  level: string;
  out?: string;
  store?: string;
}

export function registerExport(program: Command): void {
  program
    .command('export')
    .description('write a run as rows (one per trial or per request, every stored figure) or as vLLM `bench serve` result objects')
    .argument('<run>', 'run id')
    .option('--format <format>', `${EXPORT_FORMATS.join(' | ')} (vllm-bench: one result object per line, per variant and workload level)`, 'csv')
    .option('--level <level>', 'trial | request (vllm-bench: request adds the per-request lists of --save-detailed)', 'trial')
    .option('--out <file>', 'write to FILE (default: stdout; parquet needs a file)')
    .option('--store <path>', 'result store (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .action(async (runArg: string, flags: ExportFlags) => {
      const runId = parseRunId(runArg);
      const format = oneOf<ExportFormat>('--format', flags.format, EXPORT_FORMATS);
      const level = oneOf<ExportLevel>('--level', flags.level, EXPORT_LEVELS);
      if (format === 'parquet' && flags.out === undefined)
        throw usage('--format parquet writes a binary file, not text for a terminal', 'add --out FILE.parquet');
      const db = openStoreForReading(defaultStorePath(flags.store));
      try {
        const result = await exportRun(db, runId, format, level);
        if (result.status !== 'done') process.stderr.write(`note: run ${runId} is ${result.status}: exported what it stored so far\n`);
        if (flags.out === undefined) {
          process.stdout.write(result.content);
          return;
        }
        try {
          writeFileSync(flags.out, result.content);
        } catch (error) {
          throw new UserError(`cannot write ${flags.out}: ${messageOf(error)}`, 'pick a writable path for --out');
        }
        process.stdout.write(`run ${runId}: ${result.count} ${result.unit} → ${flags.out}\n`);
      } finally {
        db.close();
      }
    });
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw usage(`${flag} must be one of ${allowed.join(', ')}, got "${value}"`, `e.g. ${flag} ${allowed[0]}`);
}

function parseRunId(text: string): number {
  const id = Number(text);
  if (!Number.isInteger(id) || id < 1) throw usage(`run id must be a positive integer, got "${text}"`, 'see run ids with `servelab ls`');
  return id;
}

function usage(message: string, hint: string): UserError {
  return new UserError(message, hint, ExitCode.usage);
}
