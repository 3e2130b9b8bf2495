/** What the run's trials ran on: the fingerprint keys all share, and each variant's differences from the baseline. */
import { diffFingerprints, flattenFingerprint, isVolatileKey } from '../fingerprint/diff.js';
import type { Fingerprint } from '../fingerprint/types.js';
import type { EnvironmentSummary, RunData } from './model.js';

export function environmentSummary(data: RunData, variants: string[], baseline: string): EnvironmentSummary {
  const fingerprints = [...new Set(data.trials.map((trial) => trial.fingerprintId))]
    .map((id) => data.fingerprints.get(id)?.fingerprint)
    .filter((fingerprint) => fingerprint !== undefined);
  const flats = fingerprints.map(flattenFingerprint);
  const first = flats[0] ?? {};
  const common = Object.entries(first)
    // Readings of the moment (host load, current clock) are machine state, shown with the telemetry, not the environment.
    .filter(([key, value]) => !isVolatileKey(key) && flats.every((flat) => flat[key] === value))
    .map(([key, value]) => ({ key, value }));
  const reference = representativeFingerprint(data, baseline);
  const variantChanges = reference
    ? variants
        .filter((variant) => variant !== baseline)
        .flatMap((variant) => {
          const fingerprint = representativeFingerprint(data, variant, false);
          return fingerprint ? [{ variant, changes: diffFingerprints(reference, fingerprint) }] : [];
        })
    : [];
  return { common, variants: variantChanges, distinctFingerprints: fingerprints.length };
}

/** The fingerprint of a variant's first trial (or of the run's first trial when the variant has none). */
export function representativeFingerprint(data: RunData, variant: string | undefined, fallback = true): Fingerprint | undefined {
  const trial = data.trials.find((candidate) => candidate.variant === variant) ?? (fallback ? data.trials[0] : undefined);
  return trial && data.fingerprints.get(trial.fingerprintId)?.fingerprint;
}
