import { createHash } from 'node:crypto';
import type { Fingerprint, FingerprintChange } from './types.js';

/**
 * Flattened keys that are readings of the machine's state, not its configuration: they change between identical
 * setups (the current SM clock follows load and power state; the preflight's host load, memory already in use,
 * foreign processes and active clock-event reasons are what the machine was doing at that moment). They are kept
 * as information and belong to machine state (telemetry attribution), never to an environment diff. The settings
 * the preflight reports (application clocks, power limit, persistence mode, CPU governor) are configuration.
 */
const VOLATILE_KEY = /^(gpus\.\d+\.smClockMHz|preflight\.host\.load|preflight\.gpu\d+\.(foreignProcesses|foreignMemory|clockEvents))$/;

/** Whether a flattened fingerprint key is a volatile reading (machine state) rather than configuration. */
export function isVolatileKey(key: string): boolean {
  return VOLATILE_KEY.test(key);
}

/**
 * Every fact of a fingerprint as `key → string`: servelabVersion, executor, host.cpuModel, gpus.0.driver, command,
 * env.NCCL_PROTO, packages.vllm, model… Absent optional facts have no key.
 */
export function flattenFingerprint(fp: Fingerprint): Record<string, string> {
  const flat: Record<string, string> = {};
  const put = (key: string, value: string | number | undefined): void => {
    if (value !== undefined) flat[key] = String(value);
  };
  put('servelabVersion', fp.servelabVersion);
  put('servelabGitSha', fp.servelabGitSha);
  put('executor', fp.executor);
  for (const [field, value] of Object.entries(fp.host)) put(`host.${field}`, value);
  fp.gpus.forEach((gpu, position) => {
    for (const [field, value] of Object.entries(gpu)) if (field !== 'index') put(`gpus.${position}.${field}`, value);
  });
  put('command', formatCommand(fp.command));
  for (const [name, value] of Object.entries(fp.env)) put(`env.${name}`, value);
  for (const [name, version] of Object.entries(fp.packages)) put(`packages.${name}`, version);
  put('model', fp.model);
  for (const [key, value] of Object.entries(fp.system ?? {})) put(`system.${key}`, value);
  for (const [key, value] of Object.entries(fp.preflight ?? {})) put(`preflight.${key}`, value);
  return flat;
}

/** argv as one readable line; arguments that need it are JSON-quoted so spaces stay unambiguous. */
function formatCommand(argv: readonly string[]): string {
  return argv.map((arg) => (/^[\w@%+=:,./{}-]+$/.test(arg) ? arg : JSON.stringify(arg))).join(' ');
}

/**
 * Configuration facts that differ from `a` to `b`, in `a`'s key order then keys new in `b`: the environment diff.
 * Volatile readings (isVolatileKey) are skipped unless asked for.
 */
export function diffFingerprints(a: Fingerprint, b: Fingerprint, options: { includeVolatile?: boolean } = {}): FingerprintChange[] {
  const before = flattenFingerprint(a);
  const after = flattenFingerprint(b);
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  const changes: FingerprintChange[] = [];
  for (const key of keys) {
    if (!options.includeVolatile && isVolatileKey(key)) continue;
    if (before[key] === after[key]) continue;
    const change: FingerprintChange = { key };
    if (before[key] !== undefined) change.before = before[key];
    if (after[key] !== undefined) change.after = after[key];
    changes.push(change);
  }
  return changes;
}

/**
 * sha256 (hex) of the canonical JSON (sorted keys) of the fingerprint without its current SM clock, to dedupe stored
 * fingerprints: an equal hash means diffFingerprints finds no change. The preflight readings stay in the hash
 * although they are volatile, so each stored fingerprint keeps what the machine was doing when it was taken.
 */
export function fingerprintHash(fp: Fingerprint): string {
  const stable = { ...fp, gpus: fp.gpus.map(({ smClockMHz: _volatile, ...rest }) => rest) };
  return createHash('sha256').update(canonicalJson(stable)).digest('hex');
}

/** JSON with object keys sorted at every level (array order kept), undefined members dropped. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const members = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
      .map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`);
    return `{${members.join(',')}}`;
  }
  return JSON.stringify(value);
}

/** `NCCL_PROTO LL → (unset), gpus.0.driver 550.54 → 560.35`: env keys without their `env.` prefix. */
export function formatChanges(changes: readonly FingerprintChange[]): string {
  return changes.map((change) => `${change.key.replace(/^env\./, '')} ${change.before ?? '(unset)'} → ${change.after ?? '(unset)'}`).join(', ');
}
