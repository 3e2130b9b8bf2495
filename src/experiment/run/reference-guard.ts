import { diffFingerprints, formatChanges } from '../../fingerprint/diff.js';
import type { Fingerprint, FingerprintChange } from '../../fingerprint/types.js';
import type { Db } from '../../store/db.js';
import { getFingerprint, listRuns, listTrials } from '../../store/queries.js';
import { UserError } from '../../util/errors.js';
import { redactor } from '../../util/redact.js';

/**
 * The reference guard: before a server config measures anything, its configuration is compared with the reference
 * one, and a difference stops the run unless accepted. Tuning variables lost after a reboot (NCCL_PROTO=LL gone)
 * otherwise only show up as slower numbers, and a short history cannot tell a 10% slowdown from noise at all.
 */

/**
 * Facts that say which tool and which machine, not how the server is set up: servelab's own version (a new build
 * stopping every run would teach people to pass --accept-env-change by habit) and the machine's name (hostname,
 * executor label, PCI bus id: a Slurm job lands on any node of its partition). Diffs still show them.
 */
const IDENTITY_KEY = /^(servelabVersion|servelabGitSha|executor|host\.hostname|gpus\.\d+\.busId)$/;

/**
 * Configuration differences from `reference` to `current`: every fingerprint fact (env incl. NCCL_*, command and
 * args, packages and build ids, driver, GPU model/count, power limit, application clocks…) except volatile readings
 * (machine state: load, current clocks, memory in use), identity facts (servelab version, machine name) and a
 * secret's new value. Pure.
 */
export function configurationChanges(reference: Fingerprint, current: Fingerprint): FingerprintChange[] {
  return diffFingerprints(reference, current).filter((change) => !IDENTITY_KEY.test(change.key) && !secretOnly(change));
}

const MARKERS = /<redacted(:[0-9a-f]{12})?>/g;

/** A rotated token (HF_TOKEN, an --api-key) changes its redaction marker, not what the server computes. */
function secretOnly(change: FingerprintChange): boolean {
  const masked = (value: string | undefined) => value?.replace(MARKERS, '<redacted>');
  return change.before !== undefined && change.after !== undefined && masked(change.before) === masked(change.after);
}

export interface ReferenceFingerprint {
  /** Where it comes from, for messages: "this run's earlier trials" or "run 12 (the last finished run)". */
  source: string;
  fingerprint: Fingerprint;
}

/**
 * What a server config is compared with: this run's own earlier fingerprint of the config when it has trials (a
 * resume must not measure on after a reboot lost the tuning), else that of the same variant in the last finished
 * run of the experiment. Undefined for a first run (or a variant new since).
 */
export function referenceFingerprint(
  db: Db,
  target: { runId: number; experimentName: string; serverKey: string; variants: readonly string[]; lane?: number },
): ReferenceFingerprint | undefined {
  // With lanes, each lane is compared with itself: lanes differ in their own env (CUDA_VISIBLE_DEVICES) by design.
  const onLane = (trial: { lane?: number }) => target.lane === undefined || (trial.lane ?? 0) === target.lane;
  const own = listTrials(db, target.runId).find((trial) => trial.serverKey === target.serverKey && onLane(trial));
  const ownFingerprint = own && getFingerprint(db, own.fingerprintId);
  if (ownFingerprint) return { source: "this run's earlier trials", fingerprint: ownFingerprint };
  const reference = listRuns(db, { experimentName: target.experimentName }).find((run) => run.status === 'done' && run.id !== target.runId);
  if (!reference) return undefined;
  const trials = listTrials(db, reference.id);
  for (const variant of target.variants) {
    const trial = trials.find((candidate) => candidate.variant === variant && onLane(candidate));
    const fingerprint = trial && getFingerprint(db, trial.fingerprintId);
    if (fingerprint) return { source: `run ${reference.id} (the last finished run of "${target.experimentName}")`, fingerprint };
  }
  return undefined;
}

/**
 * The history trials measured on the configuration of `fingerprint`: the drift rule judges numbers against the same
 * setup only, so a configuration change accepted with --accept-env-change starts a new history instead of raising a
 * drift alarm on every later run. Volatile readings and identity facts do not split a history.
 */
export function sameConfiguration<T extends { fingerprintId: number }>(db: Db, history: readonly T[], fingerprint: Fingerprint): T[] {
  const current = redactor().deep(fingerprint);
  const same = new Map<number, boolean>();
  return history.filter((trial) => {
    let known = same.get(trial.fingerprintId);
    if (known === undefined) {
      const recorded = getFingerprint(db, trial.fingerprintId);
      known = recorded !== undefined && configurationChanges(recorded, current).length === 0;
      same.set(trial.fingerprintId, known);
    }
    return known;
  });
}

/** At most this many changes are named in the one-line cause; all of them are printed before it. */
const NAMED_IN_CAUSE = 3;

/**
 * Compare a started server config's fingerprint with its reference before its first trial: print every
 * configuration difference, then throw (a UserError naming them) unless `accept`. Silent when there is no
 * reference or nothing differs.
 */
export function guardReference(
  db: Db,
  target: { runId: number; experimentName: string; filePath: string; serverKey: string; variants: readonly string[]; lane?: number },
  fingerprint: Fingerprint,
  options: { accept: boolean; log: (line: string) => void },
): void {
  const reference = referenceFingerprint(db, target);
  if (!reference) return;
  // Stored fingerprints went through the store's redaction: compare like with like.
  const changes = configurationChanges(reference.fingerprint, redactor().deep(fingerprint));
  if (changes.length === 0) return;
  const label = target.variants.join(', ');
  options.log(`configuration of ${label} differs from ${reference.source}, before any trial:`);
  for (const change of changes) options.log(`  ${formatChanges([change])}`);
  if (options.accept) {
    options.log('measuring anyway (--accept-env-change): this configuration starts its own drift history');
    return;
  }
  const named = formatChanges(changes.slice(0, NAMED_IN_CAUSE));
  const more = changes.length > NAMED_IN_CAUSE ? ` (+${changes.length - NAMED_IN_CAUSE} more, listed above)` : '';
  throw new UserError(
    `environment of ${label} differs from ${reference.source}: ${named}${more}; nothing was measured`,
    `restore it (e.g. the variables in the server's environment) and run again, or measure the new environment with \`servelab run ${target.filePath} --accept-env-change\``,
  );
}
