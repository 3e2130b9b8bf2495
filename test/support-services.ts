/**
 * Tests that need a service outside Node (Chromium, the CI sshd, the CI Slurm cluster) are skipped, saying why,
 * where it is missing, and counted as skipped in the node:test summary. Under CI (CI=true) a missing service is
 * a failure instead: CI installs and starts them all, so a skip there would hide tests that silently vanished.
 */

/** node:test options for a test that needs a service: `reason` says why it cannot run here, undefined when it can. */
export function needs(reason: string | undefined): { skip: string | false } {
  if (reason === undefined) return { skip: false };
  if (process.env.CI === 'true') throw new Error(`CI=true but a test service is missing: ${reason}`);
  return { skip: reason };
}
