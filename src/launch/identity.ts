import { createHash } from 'node:crypto';
import { MASKING } from '../util/redact.js';

/** Everything that makes two server startups the same configuration. */
export interface ServerIdentityParts {
  profile: string;
  /** argv before placeholder substitution: a new free port is still the same config. */
  command: readonly string[];
  env: Readonly<Record<string, string>>;
  unsetEnv?: readonly string[];
  cwd?: string;
  model?: string;
}

/**
 * The one identity of a server configuration, shared by the experiment runner (variants with equal identities share
 * a running server) and by startup history (`servelab launch` and `run` predict time to ready from the same key).
 */
export function serverIdentity(parts: ServerIdentityParts): string {
  const canonical = JSON.stringify([
    parts.profile,
    // Masked: keys are stored unsalted, so a hash over a secret would let a weak one be guessed back.
    MASKING.args([...parts.command]),
    Object.entries(MASKING.env({ ...parts.env })).sort(([a], [b]) => a.localeCompare(b)),
    [...(parts.unsetEnv ?? [])].sort(),
    parts.cwd ?? null,
    parts.model ?? null,
  ]);
  return createHash('sha256').update(canonical).digest('hex').slice(0, 16);
}
