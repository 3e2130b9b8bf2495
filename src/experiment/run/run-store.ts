import type { Db } from '../../store/db.js';
import type { RunDetail } from '../../store/queries.js';
import { getRun } from '../../store/queries.js';
import { ensureExperiment, insertRun } from '../../store/runs.js';
import type { RunStatus } from '../../store/types.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { addRedactionPatterns, containsMarker, redactor } from '../../util/redact.js';
import { VERSION } from '../../version.js';
import { loadCostModel } from '../plan/budget.js';
import { chooseSchedule } from '../plan/schedule.js';
import { loadExperiment } from '../spec/load.js';
import { storedExperimentOf, storedVerdictsOf } from '../spec/stored.js';
import type { Plan, ResolvedExperiment, VariantVerdict } from '../spec/types.js';

/**
 * The trial plan of an experiment: deterministic in its seed and costs. Without a store, `schedule: auto` decides
 * on the stated default costs; `servelab run` passes the plan it costed from the store instead.
 */
export interface RunOutcome {
  runId: number;
  status: RunStatus;
  message?: string;
  verdicts?: VariantVerdict[];
}

export function planFor(experiment: ResolvedExperiment, db?: Db): Plan {
  return chooseSchedule(experiment, loadCostModel(db, experiment)).plan;
}

/**
 * Record a new run (status 'running') with its resolved config and plan; the Slurm dispatcher calls this too (a local
 * runner creates its run with its lease, in runner.ts).
 */
export function createRun(db: Db, experiment: ResolvedExperiment, options: { gitSha?: string; plan?: Plan } = {}): number {
  addRedactionPatterns(experiment.fingerprint.redact);
  const experimentId = ensureExperiment(db, experiment.name, experiment.filePath);
  return insertRun(db, {
    experimentId,
    servelabVersion: VERSION,
    ...(options.gitSha !== undefined && { gitSha: options.gitSha }),
    config: redactExperiment(experiment),
    plan: options.plan ?? planFor(experiment, db),
  });
}

export interface StoredRun {
  run: RunDetail;
  experiment: ResolvedExperiment;
  plan: Plan;
}

/** A run with its stored experiment and plan — what a resume or a Slurm job replays. */
export function loadRun(db: Db, runId: number): StoredRun {
  const run = getRun(db, runId);
  if (!run) throw new UserError(`run ${runId} is not in the store`, 'list runs with `servelab ls` (and check --store)', ExitCode.usage);
  return { run, experiment: storedExperimentOf(run), plan: run.plan };
}

/**
 * The experiment as the store keeps it: secrets (env values, flag values, URL passwords… see util/redact.ts) become
 * salted markers, with the experiment's own `fingerprint.redact` names on top of the defaults.
 */
export function redactExperiment(experiment: ResolvedExperiment): ResolvedExperiment {
  return JSON.parse(JSON.stringify(redactor().withPatterns(experiment.fingerprint.redact).deep(experiment))) as ResolvedExperiment;
}

/**
 * A stored run ready to launch servers again (new run, resume, Slurm job): the stored experiment, always. Secrets are
 * not in the store, so each marker is filled with a secret that gives the very same marker (a keyed hash of the
 * value: the same secret), found in `given` — the experiment the caller holds (a library caller's object, which
 * may come from a file since edited or removed, or from no file at all) — else in the run's experiment file. A
 * marker without its secret refuses the run: a resume never runs a different config silently. Whether the rest of
 * the file changed is the caller's check (resume-check.ts), made before the run is taken.
 */
export function loadRunToExecute(db: Db, runId: number, given?: ResolvedExperiment): StoredRun {
  const stored = loadRun(db, runId);
  // Before anything of the run is launched, logged or stored: its own secret names are hidden in every sink.
  addRedactionPatterns(stored.experiment.fingerprint.redact);
  if (!containsMarker(stored.experiment)) return stored;
  const path = stored.experiment.filePath;
  let source = given;
  if (source === undefined) {
    try {
      source = loadExperiment(path);
    } catch (error) {
      throw new UserError(
        `run ${runId} needs its experiment file for the secrets the store does not keep: ${messageOf(error)}`,
        `restore ${path} as it was when the run started, or start a new run`,
      );
    }
  }
  const secrets = new Map<string, string>();
  collectSecrets(source, redactExperiment(source), secrets);
  const missing: string[] = [];
  const experiment = fillSecrets(stored.experiment, secrets, '', missing) as ResolvedExperiment;
  if (missing.length > 0) {
    const holder = given ? 'the experiment given' : path;
    throw new UserError(
      `run ${runId}: ${holder} no longer holds the secrets of ${missing.join(', ')} it had when the run started (the store keeps them only as markers)`,
      given ? 'pass the experiment the run started with, or start a new run' : `restore ${path} as it was, or start a new run with \`servelab run ${path}\``,
    );
  }
  return { ...stored, experiment };
}

const MARKER = /(<redacted:[0-9a-f]{12}>)/;

/** Marker → secret, from each string of the file's experiment and its redacted copy (checked: the secret gives the marker). */
function collectSecrets(raw: unknown, redacted: unknown, secrets: Map<string, string>): void {
  if (typeof raw === 'string' && typeof redacted === 'string') {
    const parts = redacted.split(MARKER);
    if (parts.length === 1) return;
    const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const match = new RegExp(`^${parts.map((part, index) => (index % 2 === 1 ? '([\\s\\S]*?)' : literal(part))).join('')}$`).exec(raw);
    parts.forEach((part, index) => {
      const secret = match?.[(index + 1) / 2];
      if (index % 2 === 1 && secret !== undefined && redactor().value(secret) === part) secrets.set(part, secret);
    });
    return;
  }
  if (typeof raw !== 'object' || raw === null || typeof redacted !== 'object' || redacted === null) return;
  for (const [name, value] of Object.entries(raw)) collectSecrets(value, (redacted as Record<string, unknown>)[name], secrets);
}

/** `stored` with each marker replaced by its secret; the places of markers without one go to `missing`. */
function fillSecrets(stored: unknown, secrets: Map<string, string>, key: string, missing: string[]): unknown {
  if (typeof stored === 'string') {
    if (!containsMarker(stored)) return stored;
    const parts = stored.split(MARKER);
    if (parts.some((part, index) => index % 2 === 1 && !secrets.has(part))) missing.push(key);
    return parts.map((part, index) => (index % 2 === 1 ? (secrets.get(part) ?? part) : part)).join('');
  }
  if (Array.isArray(stored)) return stored.map((item, index) => fillSecrets(item, secrets, `${key}[${index}]`, missing));
  if (typeof stored !== 'object' || stored === null) return stored;
  return Object.fromEntries(Object.entries(stored).map(([name, value]) => [name, fillSecrets(value, secrets, key ? `${key}.${name}` : name, missing)]));
}

/**
 * Before continuing a stored run: one a drift alarm stopped continues only when the drift is accepted (else a
 * UserError); a finished one has nothing left to run and gives back its stored outcome.
 */
export function finishedOutcome(run: RunDetail, acceptDrift: boolean): RunOutcome | undefined {
  if (run.status === 'drift' && !acceptDrift) {
    throw new UserError(
      `run ${run.id} stopped on a drift alarm: ${run.message ?? ''}`,
      'fix the environment and start a new run, or resume with --accept-drift',
    );
  }
  if (run.status !== 'done') return undefined;
  return { runId: run.id, status: 'done', ...(run.verdicts !== undefined && { verdicts: storedVerdictsOf(run) }) };
}
