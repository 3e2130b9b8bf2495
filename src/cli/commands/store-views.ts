import type { Command } from 'commander';
import { diffRuns, formatRunDiff, formatRunList, formatRunShow } from '../../experiment/format.js';
import type { ResolvedExperiment } from '../../experiment/types.js';
import { defaultStorePath, openStore, type Db } from '../../store/db.js';
import { getFingerprint, getRun, listRuns, listTrials, type RunDetail } from '../../store/queries.js';
import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';

interface ViewFlags {
  store?: string;
  json?: boolean;
}

export function registerStoreViews(program: Command): void {
  program
    .command('ls')
    .description('list experiment runs, newest first')
    .option('--store <path>', 'result store (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .option('--experiment <name>', 'only runs of this experiment')
    .option('--limit <n>', 'at most this many runs', '50')
    .option('--json', 'machine-readable output')
    .action((flags: ViewFlags & { experiment?: string; limit: string }) =>
      withStore(flags, (db) => {
        const runs = listRuns(db, { ...(flags.experiment !== undefined && { experimentName: flags.experiment }), limit: Number(flags.limit) || 50 });
        if (flags.json) return JSON.stringify(runs.map(({ config: _config, plan: _plan, ...summary }) => summary), null, 2);
        return formatRunList(runs);
      }),
    );

  program
    .command('show')
    .description('show a run: plan, trials, per-variant medians and verdicts')
    .argument('<run>', 'run id')
    .option('--store <path>', 'result store')
    .option('--json', 'machine-readable output')
    .action((runArg: string, flags: ViewFlags) =>
      withStore(flags, (db) => {
        const run = requireRun(db, runArg);
        const trials = listTrials(db, run.id);
        return flags.json ? JSON.stringify({ run, trials }, null, 2) : formatRunShow(run, trials);
      }),
    );

  program
    .command('diff')
    .description('fingerprint and metric differences between two runs')
    .argument('<runA>', 'earlier run id')
    .argument('<runB>', 'later run id')
    .option('--store <path>', 'result store')
    .option('--json', 'machine-readable output')
    .action((aArg: string, bArg: string, flags: ViewFlags) =>
      withStore(flags, (db) => {
        const [a, b] = [requireRun(db, aArg), requireRun(db, bArg)];
        const side = (run: RunDetail) => ({
          experiment: run.config as ResolvedExperiment,
          trials: listTrials(db, run.id),
          fingerprint: (id: number) => getFingerprint(db, id),
        });
        const diff = diffRuns(side(a), side(b));
        return flags.json ? JSON.stringify(diff, null, 2) : formatRunDiff(a.id, b.id, (a.config as ResolvedExperiment).metric, diff);
      }),
    );
}

function withStore(flags: ViewFlags, render: (db: Db) => string): void {
  const path = defaultStorePath(flags.store);
  const db = openStore(path, { readonly: true });
  try {
    process.stdout.write(`${render(db)}\n`);
  } finally {
    db.close();
  }
}

function requireRun(db: Db, text: string): RunDetail {
  const id = Number(text);
  if (!Number.isInteger(id) || id < 1) throw new UserError(`run id must be a positive integer, got "${text}"`, 'see run ids with `servelab ls`', ExitCode.usage);
  const run = getRun(db, id);
  if (!run) throw new UserError(`run ${id} is not in the store`, 'see run ids with `servelab ls` (and check --store)', ExitCode.usage);
  return run;
}
