import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import type { ExecutorConfig } from '../src/exec/config.js';
import { SshExecutor } from '../src/exec/ssh.js';
import { ciSshd, needs } from './support-services.js';

const ci = ciSshd();
const SLOW_KEY_MISSING = ci.sshd && !ci.sshd.slowShellIdentityFile ? 'the test sshd has no slow-shell key: rerun `sudo bash ci/start-sshd.sh`' : undefined;

/** An SSH executor on the CI sshd, logging into `lines`, with the normal key or the one whose commands start 0.7 s late. */
function executorWith(t: TestContext, key: 'normal' | 'slow') {
  const sshd = ci.sshd!;
  const dir = mkdtempSync(join(tmpdir(), 'servelab-ssh-startup-'));
  const lines: string[] = [];
  const config: Extract<ExecutorConfig, { kind: 'ssh' }> = {
    kind: 'ssh',
    host: sshd.host,
    port: sshd.port,
    identityFile: key === 'slow' ? sshd.slowShellIdentityFile! : sshd.identityFile,
    sshOptions: [`UserKnownHostsFile=${sshd.knownHosts}`, 'StrictHostKeyChecking=yes', 'IdentitiesOnly=yes'],
    client: 'local',
  };
  const executor = new SshExecutor(config, { workDir: dir, log: (line) => lines.push(line) });
  t.after(async () => {
    await executor.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return { executor, lines };
}

test('a host whose commands start slowly is named once, with the time and where to look', needs(ci.skip ?? SLOW_KEY_MISSING), async (t) => {
  const { executor, lines } = executorWith(t, 'slow');
  const first = await executor.run(['echo', 'hello']);
  assert.equal(first.stdout.trim(), 'hello');
  await executor.run(['true']);
  const warnings = lines.filter((line) => line.includes('to start on'));
  assert.equal(warnings.length, 1, `one warning, not one per command: ${JSON.stringify(lines)}`);
  const seconds = Number(/takes (\d+\.\d) s to start/.exec(warnings[0]!)?.[1]);
  assert.ok(seconds >= 0.7, `the forced 0.7 s sleep is in the figure: ${warnings[0]}`);
  assert.match(warnings[0]!, /docs\/remote\.md/);
});

test('a host whose commands start at once gets no warning', needs(ci.skip), async (t) => {
  const { executor, lines } = executorWith(t, 'normal');
  assert.equal((await executor.run(['echo', 'hello'])).stdout.trim(), 'hello');
  assert.deepEqual(
    lines.filter((line) => line.includes('to start on')),
    [],
  );
});
