import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

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

export const CI_DIR = process.env.SERVELAB_CI_DIR ?? '/tmp/servelab-ci';
const READY_FILE = join(CI_DIR, 'ssh', 'ready');

export interface CiSshd {
  host: string;
  port: number;
  identityFile: string;
  /** A key whose every command starts 0.7 s late (a forced `sleep 0.7` before it), as behind a slow ~/.bashrc. */
  slowShellIdentityFile?: string;
  knownHosts: string;
}

/** The CI sshd, when ci/start-sshd.sh has started it and a key login works right now. */
export function ciSshd(): { sshd?: CiSshd; skip?: string } {
  const howTo = 'run `sudo bash ci/start-sshd.sh` to enable these tests (CI does)';
  if (!existsSync(READY_FILE)) return { skip: `test sshd not running (${READY_FILE} missing): ${howTo}` };
  const sshd = JSON.parse(readFileSync(READY_FILE, 'utf8')) as CiSshd;
  const login = spawnSync(
    'ssh',
    [
      '-F',
      '/dev/null',
      '-p',
      String(sshd.port),
      '-i',
      sshd.identityFile,
      '-o',
      'BatchMode=yes',
      '-o',
      `UserKnownHostsFile=${sshd.knownHosts}`,
      '-o',
      'ConnectTimeout=5',
      sshd.host,
      'true',
    ],
    { timeout: 15_000, encoding: 'utf8' },
  );
  if (login.status !== 0) return { skip: `test sshd on 127.0.0.1:${sshd.port} refuses the CI key (${(login.stderr ?? '').trim()}): ${howTo}` };
  return { sshd };
}
