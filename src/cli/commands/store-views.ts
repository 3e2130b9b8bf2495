import type { Command } from 'commander';
import { campaignSummary } from '../../experiment/run/campaign-report.js';
import { storedExperimentOf } from '../../experiment/spec/stored.js';
import { numberedFromOne, trialNumbers } from '../../experiment/spec/trial-number.js';
import { formatRunList, formatRunShow } from '../../experiment/text/format.js';
import { formatLaneReport } from '../../experiment/text/lane-format.js';
import { storedBisect } from '../../report/bisect.js';
import { compareRuns } from '../../report/compare.js';
import { comparisonText } from '../../report/compare-text.js';
import { leftOutNotes, runVerdicts } from '../../report/model.js';
import { conclusionJson, loadConclusion, loadRunData, runJson } from '../../report/queries.js';
import { type Db, defaultStorePath } from '../../store/db.js';
import { type DriftAlarmRecord, listDriftAlarms } from '../../store/drift-alarms.js';
import { getRun, listInvalidTrials, listRuns, listTrials, type RunDetail, trialHealth, unplannedRestarts } from '../../store/queries.js';
import { openStoreForReading, viewedRuns } from '../../store/reads.js';
import type { UnreadableRow } from '../../store/row-json.js';
import type { StoredVerdicts } from '../../store/run-json.js';
import { listSearchSteps } from '../../store/search.js';
import { runTelemetry } from '../../store/telemetry.js';
import type { TrialRecord } from '../../store/types.js';
import { formatTelemetryAcross, formatTelemetrySummary } from '../../telemetry/summary.js';
import type { TrialTelemetry } from '../../telemetry/types.js';
import { UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { formatTrialNumber } from '../../util/format.js';
import { redactor } from '../../util/redact.js';
import { terminalJson, terminalText } from '../../util/terminal-text.js';

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
        const runs = viewedRuns(
          db,
          listRuns(db, { ...(flags.experiment !== undefined && { experimentName: flags.experiment }), limit: Number(flags.limit) || 50 }),
        );
        // Each done run's verdicts as its conclusion words them (an infeasible config's "faster, outputs changed").
        const conclusions = new Map(runs.filter((run) => run.status === 'done').map((run) => [run.id, loadConclusion(db, run, { ranking: false })]));
        if (flags.json)
          return JSON.stringify(
            runs.map((run) => {
              const { config: _config, plan: _plan, ...summary } = runJson(run);
              const concluded = conclusions.get(summary.id);
              // A search's answer as `show --json` gives it, less its heatmaps.
              const { heatmaps: _heatmaps, ...search } = concluded?.search ?? { heatmaps: [] };
              return { ...summary, ...(concluded && { conclusion: conclusionJson(concluded).conclusion }), ...(concluded?.search && { search }) };
            }),
            null,
            2,
          );
        return formatRunList(runs, conclusions);
      }),
    );

  program
    .command('show')
    .description('show a run: plan, trials, per-variant medians and verdicts')
    .argument('<run>', 'run id')
    .option('--store <path>', 'result store')
    .option('--machine', 'machine state per trial (default: one line per variant)')
    .option('--json', 'machine-readable output')
    .action((runArg: string, flags: ViewFlags & { machine?: boolean }) =>
      withStore(flags, (db) => {
        const stored = requireRun(db, runArg);
        const unreadable: UnreadableRow[] = [];
        const trials = listTrials(db, stored.id, unreadable);
        // Medians, n and verdicts count the same trials: stored verdicts that counted others are recomputed.
        const verdicts = runVerdicts(stored, trials, trialHealth(db, stored.id));
        const [viewed] = viewedRuns(db, [stored]);
        // A search's verdicts against its space's first point are left out where shown: runJson (JSON), formatRunShow (text).
        const run: RunDetail = { ...viewed!, ...(stored.verdicts !== undefined && { verdicts: verdicts.verdicts as unknown as StoredVerdicts }) };
        const invalidTrials = listInvalidTrials(db, run.id);
        const restarts = unplannedRestarts(db, run.id);
        const telemetry = runTelemetry(db, run.id, unreadable);
        const concluded = loadConclusion(db, run, { trials, verdicts: verdicts.verdicts, ranking: true });
        const driftAlarms = listDriftAlarms(db, run.id, unreadable);
        const notes = [...leftOutNotes({ trials, unreadable, run }, storedExperimentOf(run).metric), ...(verdicts.note ? [verdicts.note] : [])];
        const bisect = storedBisect(db, run.id);
        if (flags.json) {
          const machine = Object.fromEntries(
            [...telemetry].map(([id, recorded]) => [id, { summary: recorded.summary, serverMetricsUnavailable: recorded.serverMetrics.unavailable }]),
          );
          // Blocks, repetitions, attempts and plan positions count from 1, as in the text, the report and export.
          return JSON.stringify(
            {
              run: { ...runJson(run), plan: { ...run.plan, trials: run.plan.trials.map(numberedFromOne) } },
              trials: trials.map(numberedFromOne),
              invalidTrials: invalidTrials.map(numberedFromOne),
              unplannedRestarts: restarts,
              driftAlarms,
              telemetry: machine,
              ...conclusionJson(concluded),
              ...(bisect && { bisect: { id: bisect.id, ...bisect.view } }),
              ...(concluded.search && { searchSteps: listSearchSteps(db, run.id).map(numberedFromOne) }),
              unreadable,
              notes,
            },
            null,
            2,
          );
        }
        const numberOf = trialNumbers(run.plan);
        const numberText = (trial: TrialRecord): string => formatTrialNumber(numberOf(trial), run.plan.trials.length);
        return [
          formatRunShow(run, trials, invalidTrials, restarts, concluded),
          ...(notes.length > 0 ? ['', 'notes:', ...notes.map((note) => `  ${note}`)] : []),
          ...formatDriftAlarms(driftAlarms),
          ...(concluded.lanes ? ['', ...formatLaneReport(concluded.lanes)] : []),
          ...(flags.machine ? formatMachineState(trials, telemetry, numberText) : formatMachineSummary(run.id, trials, telemetry)),
          '',
          campaignSummary(db, run.id, concluded),
          ...(bisect ? ['', bisect.text] : []),
        ].join('\n');
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
        // The comparison the UI and report show: B against A as the drift alarm judges it.
        const comparison = compareRuns(
          loadRunData(db, a.id, { latencies: false, conclusion: false })!,
          loadRunData(db, b.id, { latencies: false, conclusion: false })!,
        );
        return flags.json ? JSON.stringify(comparison, null, 2) : comparisonText(comparison);
      }),
    );
}

/** One line per variant: its trials' machine state with each finding once (formatTelemetryAcross). */
function formatMachineSummary(runId: number, trials: readonly TrialRecord[], telemetry: ReadonlyMap<number, TrialTelemetry>): string[] {
  const byVariant = new Map<string, TrialTelemetry[]>();
  for (const trial of trials) {
    const recorded = telemetry.get(trial.id);
    if (recorded) byVariant.set(trial.variant, [...(byVariant.get(trial.variant) ?? []), recorded]);
  }
  if (byVariant.size === 0) return [];
  return [
    '',
    `machine state per variant (per trial: servelab show ${runId} --machine):`,
    ...[...byVariant].map(([variant, recorded]) => `  ${variant} (${recorded.length} trials): ${formatTelemetryAcross(recorded)}`),
  ];
}

/** `show --machine`: each trial's telemetry summary, indented under its label. */
function formatMachineState(trials: TrialRecord[], telemetry: Map<number, TrialTelemetry>, numberText: (trial: TrialRecord) => string): string[] {
  const lines: string[] = [];
  for (const trial of trials) {
    const recorded = telemetry.get(trial.id);
    if (!recorded) continue;
    const metrics = recorded.serverMetrics.unavailable ?? `${recorded.serverMetrics.series.length} server metrics scraped`;
    lines.push(`  ${numberText(trial)} ${trial.variant} ${trial.workload}: ${metrics}`);
    for (const line of formatTelemetrySummary(recorded.summary)) lines.push(`    ${line}`);
  }
  return lines.length > 0 ? ['', 'machine state per trial:', ...lines] : [];
}

/** One line per alarm the runner raised, from the stored rows. */
function formatDriftAlarms(alarms: readonly DriftAlarmRecord[]): string[] {
  if (alarms.length === 0) return [];
  return ['', 'drift alarms:', ...alarms.map((alarm) => `  ${alarm.message}${alarm.accepted ? ' (accepted with --accept-drift)' : ''}`)];
}

function withStore(flags: ViewFlags, render: (db: Db) => string): void {
  const db = openStoreForReading(defaultStorePath(flags.store));
  try {
    // Stores written before redaction existed may still hold secrets: nothing printed shows them. Stored strings
    // (dataset categories, server answers) may hold terminal escapes: none reaches the terminal raw.
    const text = redactor().text(render(db));
    process.stdout.write(`${flags.json ? terminalJson(text) : terminalText(text)}\n`);
  } finally {
    db.close();
  }
}

function requireRun(db: Db, text: string): RunDetail {
  const id = Number(text);
  if (!Number.isInteger(id) || id < 1)
    throw new UserError(`run id must be a positive integer, got "${text}"`, 'see run ids with `servelab ls`', ExitCode.usage);
  const run = getRun(db, id);
  if (!run) throw new UserError(`run ${id} is not in the store`, 'see run ids with `servelab ls` (and check --store)', ExitCode.usage);
  return run;
}
