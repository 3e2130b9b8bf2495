import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { shellQuote } from '../../exec/remote-shell.js';
import {
  classifyState,
  type JobStatus,
  parseSacct,
  parseSbatchParsable,
  parseScontrolJob,
  parseSqueue,
  SACCT_FORMAT,
  SQUEUE_FORMAT,
  slurmJobScript,
} from '../../exec/slurm-text.js';
import type { ExecutorConfig } from '../../exec/types.js';
import { servelabGitSha } from '../../fingerprint/collect.js';
import { type Db, openStore } from '../../store/db.js';
import { revokeLease } from '../../store/lease.js';
import { getRun, listTrials } from '../../store/queries.js';
import { setRunStatus } from '../../store/runs.js';
import { UserError } from '../../util/errors.js';
import { readLastLines } from '../../util/log-tail.js';
import { slotKey } from '../../util/trial-keys.js';
import { loadExperiment } from '../spec/load.js';
import { finalizeRun } from './finalize.js';
import { createRun, finishedOutcome, loadRun, type RunOutcome } from './run-store.js';
import { slurmLaneScope } from './slurm-lane.js';

type SlurmConfig = Extract<ExecutorConfig, { kind: 'slurm' }>;

export interface SlurmRunOptions {
  experimentPath: string;
  /** Continue this run instead of creating one: its lanes' jobs take the trials still missing. */
  runId?: number;
  /** The shared store every job writes into (SQLite WAL; must be on a filesystem all nodes see). */
  storePath: string;
  config: SlurmConfig;
  /** Jobs record drift alarms and continue; also needed to continue a run a drift alarm stopped. */
  acceptDrift?: boolean;
  /** Jobs measure although their configuration differs from the reference run's. */
  acceptEnvChange?: boolean;
  /** Job scripts and job logs (default: <store dir>/slurm/run-<id>); must be shared too. */
  jobDir?: string;
  /** Seconds between squeue polls (default 10). */
  pollIntervalMs?: number;
  /** Ctrl-C: cancels every job of the run (scancel). */
  signal?: AbortSignal;
  /** Progress lines (stderr in the CLI). */
  log?: (line: string) => void;
}

/** How one lane's jobs ended. */
export interface SlurmJobReport {
  /** The lane's name (`lanes:`; lane1 without). */
  lane: string;
  /** Every job id submitted for this lane, oldest first. */
  jobIds: string[];
  state: string;
  /** The last lines of the last job's log when it did not complete. */
  logTail?: string[];
}

export interface SlurmRunResult {
  runId: number;
  outcome: RunOutcome;
  jobs: SlurmJobReport[];
}

const LOG_TAIL_LINES = 20;
// After this many polls in which Slurm knows nothing of a job (purged, no accounting) it counts as lost.
const UNKNOWN_POLLS_BEFORE_LOST = 5;

interface Tracked {
  lane: { index: number; name: string };
  scriptPath: string;
  jobIds: string[];
  status: JobStatus;
  unknownPolls: number;
  attempts: number;
  done: boolean;
  logTail?: string[];
}

/**
 * Dispatch a run to Slurm: one job per lane (one without `lanes:`), each running `servelab run FILE --run-id N
 * --lane K --store PATH` on its node for its lifetime. The jobs claim whole blocks of the plan from the shared store
 * (slurm-lane.ts) and start each config's server inside their own allocation, so every comparison is made within a
 * node. Polls their states, reports jobs that end badly with their log tail (their unmeasured trials go to the lanes
 * still running), resubmits them up to `config.retries` times while trials are missing, and finalizes the run once
 * every job has ended. Ctrl-C cancels the jobs; measured trials stay stored. With `runId`, an unfinished run is
 * continued: its lanes take the trials still missing.
 */
export async function runOnSlurm(options: SlurmRunOptions): Promise<SlurmRunResult> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  await requireSlurm();
  const experimentPath = resolve(options.experimentPath);
  const storePath = resolve(options.storePath);
  const db = openStore(storePath);
  try {
    const runId = options.runId ?? (await newRun(db, experimentPath));
    const { run, experiment, plan } = loadRun(db, runId);
    const finished = finishedOutcome(run, options.acceptDrift ?? false);
    if (finished) return { runId, outcome: finished, jobs: [] };
    if (options.runId !== undefined) setRunStatus(db, runId, 'running');
    const missing = () => {
      const measured = new Set(listTrials(db, runId).map(slotKey));
      return plan.trials.filter((trial) => !measured.has(slotKey(trial))).length;
    };
    const jobDir = resolve(options.jobDir ?? join(dirname(storePath), 'slurm', `run-${runId}`));
    mkdirSync(jobDir, { recursive: true });
    const servelab = options.config.remoteServelab ?? thisServelab();
    const lanes = experiment.lanes ?? [{ name: 'lane1', env: {} }];
    log(
      `run ${runId}: ${experiment.name} on Slurm, ${lanes.length} ${lanes.length === 1 ? 'job' : 'jobs at once'}, each a lane running every server config in turn on its node (configs compared within a node); ${missing()} of ${plan.trials.length} trials to measure; job logs in ${jobDir}`,
    );

    const tracked: Tracked[] = lanes.map((spec, index) => {
      const lane = { index, name: spec.name };
      const scriptPath = join(jobDir, `${lane.name}.sbatch`);
      const { kind: _kind, retries: _retries, remoteServelab: _remote, ...sbatch } = options.config;
      writeFileSync(
        scriptPath,
        slurmJobScript({
          config: { ...sbatch, ...spec.slurm },
          experimentName: experiment.name,
          runId,
          lane,
          servelab,
          experimentPath,
          storePath,
          workDir: dirname(experimentPath),
          acceptDrift: options.acceptDrift ?? false,
          acceptEnvChange: options.acceptEnvChange ?? false,
        }),
        { mode: 0o755 },
      );
      return { lane, scriptPath, jobIds: [], status: { state: 'UNSUBMITTED' }, unknownPolls: 0, attempts: 0, done: false };
    });

    const onAbort = () => void scancel(tracked.filter((job) => !job.done).flatMap((job) => job.jobIds.slice(-1)));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (const job of tracked) await submit(job, jobDir, log);
      let measured = -1;
      while (tracked.some((job) => !job.done) && !options.signal?.aborted) {
        await delay(options.pollIntervalMs ?? 10_000, undefined, { signal: options.signal }).catch(() => undefined);
        if (options.signal?.aborted) break;
        await refresh(tracked, log);
        for (const job of tracked.filter((candidate) => !candidate.done && classifyState(candidate.status.state) !== 'active')) {
          await settle(job, {
            jobDir,
            retries: options.config.retries,
            // A job Slurm says has ended holds its lane no more: the other lanes take its blocks at once.
            release: () => revokeLease(db, runId, slurmLaneScope(job.lane.index)),
            stillWanted: () => getRun(db, runId)?.status !== 'drift' && missing() > 0,
            othersRunning: tracked.filter((other) => other !== job && !other.done).length,
            log,
          });
        }
        const count = plan.trials.length - missing();
        if (count !== measured) {
          measured = count;
          log(`run ${runId}: ${count} of ${plan.trials.length} trials measured`);
        }
      }
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }

    const jobs: SlurmJobReport[] = tracked.map((job) => ({
      lane: job.lane.name,
      jobIds: job.jobIds,
      state: job.status.state,
      ...(job.logTail && { logTail: job.logTail }),
    }));
    if (options.signal?.aborted) {
      await scancel(tracked.filter((job) => !job.done).flatMap((job) => job.jobIds.slice(-1)));
      const message = 'interrupted; Slurm jobs cancelled, measured trials are kept';
      setRunStatus(db, runId, 'interrupted', message);
      return { runId, outcome: { runId, status: 'interrupted', message }, jobs };
    }
    const outcome = finalizeRun(db, runId);
    if (outcome.status !== 'done') {
      const failed = jobs.filter((job) => job.state !== 'COMPLETED');
      const message = `${outcome.message ?? 'trials missing'}; ${
        failed.length > 0 ? `jobs ended ${failed.map((job) => `${job.jobIds.at(-1)} ${job.state}`).join(', ')}` : 'every job completed'
      }`;
      const status = getRun(db, runId)?.status === 'drift' ? 'drift' : 'failed';
      if (status === 'failed') setRunStatus(db, runId, 'failed', message);
      return { runId, outcome: { runId, status, message }, jobs };
    }
    return { runId, outcome, jobs };
  } finally {
    db.close();
  }
}

async function newRun(db: Db, experimentPath: string): Promise<number> {
  const experiment = loadExperiment(experimentPath);
  const gitSha = await servelabGitSha();
  return createRun(db, experiment, gitSha === undefined ? {} : { gitSha });
}

async function submit(job: Tracked, jobDir: string, log: (line: string) => void): Promise<void> {
  // %j: each attempt keeps its own log, so a retry does not overwrite the failure it retries.
  const output = join(jobDir, `${job.lane.name}-%j.log`);
  const result = await command('sbatch', ['--parsable', `--output=${output}`, job.scriptPath], 60_000);
  const jobId = result.code === 0 ? parseSbatchParsable(result.stdout) : undefined;
  if (!jobId) {
    throw new UserError(
      `sbatch refused the job of lane ${job.lane.name}: ${result.stderr.trim() || result.stdout.trim() || `exit code ${result.code}`}`,
      `check partition, gpusPerJob, timeLimit and sbatchArgs under executor: and the lane's slurm: (try \`sbatch --test-only ${job.scriptPath}\`)`,
    );
  }
  job.jobIds.push(jobId);
  job.attempts++;
  job.status = { state: 'PENDING' };
  job.unknownPolls = 0;
  log(`slurm job ${jobId}: lane ${job.lane.name} submitted${job.attempts > 1 ? ` (attempt ${job.attempts})` : ''}`);
}

/** Current state of each unfinished job: squeue, then sacct, then scontrol for jobs squeue no longer lists. */
async function refresh(tracked: Tracked[], log: (line: string) => void): Promise<void> {
  const open = tracked.filter((job) => !job.done);
  const ids = open.map((job) => job.jobIds.at(-1)!);
  if (ids.length === 0) return;
  const statuses = parseSqueue((await command('squeue', ['-h', '--states=all', '-j', ids.join(','), '-o', SQUEUE_FORMAT], 30_000)).stdout);
  let missing = ids.filter((id) => !statuses.has(id));
  if (missing.length > 0) {
    const sacct = await command('sacct', ['-n', '-P', '-X', '-j', missing.join(','), '-o', SACCT_FORMAT], 30_000);
    if (sacct.code === 0) for (const [id, status] of parseSacct(sacct.stdout)) statuses.set(id, status);
    missing = missing.filter((id) => !statuses.has(id));
  }
  for (const id of missing) {
    const status = parseScontrolJob((await command('scontrol', ['show', 'job', '-o', id], 30_000)).stdout);
    if (status) statuses.set(id, status);
  }
  for (const job of open) {
    const id = job.jobIds.at(-1)!;
    const status = statuses.get(id);
    if (!status) {
      // A failed poll (slurmctld busy) is not a lost job; only persistent silence is.
      if (++job.unknownPolls >= UNKNOWN_POLLS_BEFORE_LOST) job.status = { state: 'LOST' };
      continue;
    }
    job.unknownPolls = 0;
    if (status.state !== job.status.state) {
      const where = status.node && status.state === 'RUNNING' ? ` on ${status.node}` : '';
      const why = status.reason && status.state === 'PENDING' ? ` (${status.reason})` : '';
      log(`slurm job ${id}: ${job.status.state} → ${status.state}${where}${why}`);
    }
    // squeue does not know exit codes; keep what sacct/scontrol said.
    job.status = { ...status, ...(status.exitCode === undefined && job.status.exitCode !== undefined && { exitCode: job.status.exitCode }) };
  }
}

/**
 * A job that left the queue: done, or reported with its log tail, its lane released (its unmeasured trials go to the
 * lanes still running) and resubmitted while retries remain and trials are missing.
 */
async function settle(
  job: Tracked,
  context: {
    jobDir: string;
    retries: number;
    release: () => void;
    stillWanted: () => boolean;
    othersRunning: number;
    log: (line: string) => void;
  },
): Promise<void> {
  const id = job.jobIds.at(-1)!;
  if (classifyState(job.status.state) === 'completed') {
    job.done = true;
    job.logTail = undefined;
    return;
  }
  context.release();
  job.logTail = readLastLines(join(context.jobDir, `${job.lane.name}-${id}.log`), LOG_TAIL_LINES);
  const exit = job.status.exitCode ? ` (exit code ${job.status.exitCode})` : '';
  const rest = context.othersRunning > 0 ? `; its unmeasured trials go to the ${context.othersRunning} other lanes` : '';
  context.log(
    `slurm job ${id} (lane ${job.lane.name}) ended ${job.status.state}${exit}${rest}; last log lines:\n${
      job.logTail.length > 0 ? job.logTail.map((line) => `    ${line}`).join('\n') : '    (no log)'
    }`,
  );
  // A drift alarm stops the whole run on purpose: running the lane again would only raise it again.
  if (job.attempts <= context.retries && context.stillWanted()) {
    context.log(`slurm: resubmitting lane ${job.lane.name} (retry ${job.attempts} of ${context.retries}); it takes the trials still missing`);
    await submit(job, context.jobDir, context.log);
    return;
  }
  job.done = true;
}

async function scancel(jobIds: string[]): Promise<void> {
  if (jobIds.length > 0) await command('scancel', jobIds, 30_000);
}

async function requireSlurm(): Promise<void> {
  const result = await command('sbatch', ['--version'], 15_000);
  if (result.code !== 0) {
    throw new UserError(
      `executor kind slurm needs the Slurm client commands, but \`sbatch --version\` failed: ${result.stderr.trim() || 'not found'}`,
      'run servelab on a Slurm login node (sbatch, squeue on PATH), or use executor kind local or ssh',
    );
  }
}

/** The command that runs this very servelab, for nodes that share its filesystem. */
function thisServelab(): string {
  const bin = fileURLToPath(new URL('../../../../bin/servelab.js', import.meta.url));
  return existsSync(bin) ? `${shellQuote(process.execPath)} ${shellQuote(bin)}` : 'servelab';
}

function command(file: string, args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as NodeJS.ErrnoException).code === 'number' ? (error as unknown as { code: number }).code : null) : 0;
      resolvePromise({ code, stdout: String(stdout), stderr: String(stderr || (error && !stderr ? error.message : '')) });
    });
  });
}
