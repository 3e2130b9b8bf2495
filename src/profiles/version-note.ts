import type { ServerProfile } from './types.js';

/** "0.5.17.dev20260512+g339e36e" → [0, 5, 17]; "v0.14.1" → [0, 14, 1]. */
function releaseParts(version: string): number[] {
  const match = /(\d+(?:\.\d+)*)/.exec(version);
  return match ? match[1]!.split('.').map(Number) : [];
}

function isNewer(version: string, than: string): boolean {
  const [a, b] = [releaseParts(version), releaseParts(than)];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const [x, y] = [a[i] ?? 0, b[i] ?? 0];
    if (x !== y) return x > y;
  }
  return false;
}

/**
 * A one-line note when the engine that runs (its version as the fingerprint records it, `packages.sglang`, or as its
 * log prints it) is newer than the one the profile's log patterns were checked against; undefined otherwise.
 * Newer engines rename log lines, so a phase or a cause may go unseen: `servelab log` shows what is recognised.
 */
export function versionNote(profile: ServerProfile, packages: Readonly<Record<string, string>>): string | undefined {
  const checked = /^(\S+) (\S+)$/.exec(profile.checkedVersions ?? '');
  if (!checked) return undefined;
  const [, engine, checkedVersion] = checked as unknown as [string, string, string];
  const running = packages[engine];
  if (!running || !isNewer(running, checkedVersion)) return undefined;
  return `${engine} ${running} is newer than the profile's ${checkedVersion}: check with \`servelab log\``;
}
