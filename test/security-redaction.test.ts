import assert from 'node:assert/strict';
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { startUi } from '../src/ui/server.js';
import { cli, SERVELAB, tempDir, writeExperiment } from './support-experiment.js';

/** Every secret of this test contains SECRET, and nothing else servelab writes does: one search finds any leak. */
const LEAK = /SECRET/;
const SECRETS = {
  env: 'hf_SECRETenv0123456789abcdef',
  password: 'pw-SECRET-env',
  apiKey: 'sk-SECRETarg0123456789',
  token: 'tok-SECRET-eq',
  short: 'kSECRETshort',
  url: 'https://alice:urlSECRETpw@hub.example/x',
  json: '{"api_key": "jsonSECRET", "model": "m"}',
  bearer: 'Authorization: Bearer bearerSECRET',
};

/**
 * The server wrapper refuses to start unless it got the REAL secrets (so a resume launching with markers fails),
 * and fails while `failFile` exists (to leave a run unfinished).
 */
function serverCommand(failFile: string, expectedFile: string): string[] {
  const script = [
    `[ -e "${failFile}" ] && exit 3`,
    `[ "$HF_TOKEN|$MY_PASSWORD|$2" = "$(cat "${expectedFile}")" ] || exit 7`,
    `exec "${process.execPath}" "${SERVELAB}" simulate --port "$1" --load-ms 50 --tpot-ms 2 --ttft-ms 5 --jitter 0.02`,
  ].join('; ');
  return [
    'sh',
    '-c',
    script,
    'sim',
    '{port}',
    SECRETS.apiKey,
    `--token=${SECRETS.token}`,
    '-k',
    SECRETS.short,
    '--hub',
    SECRETS.url,
    '--spec',
    SECRETS.json,
    '--header',
    SECRETS.bearer,
  ];
}

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile());
}

function assertNoLeak(what: string, text: string): void {
  const at = text.search(LEAK);
  assert.equal(at, -1, `${what} leaks a secret: …${text.slice(Math.max(0, at - 80), at + 40)}…`);
}

test('no secret of env, args, URLs or JSON args is stored, logged, printed, reported or served; resume still launches with them', {
  timeout: 180_000,
}, async (t) => {
  const dir = tempDir(t, 'redaction');
  const store = join(dir, 'store', 'servelab.db');
  const failFile = join(dir, 'fail-now');
  const expectedFile = join(dir, 'expected-secrets');
  writeFileSync(expectedFile, `${SECRETS.env}|${SECRETS.password}|${SECRETS.apiKey}`);
  const experiment = (secretEnv: string): Record<string, unknown> => ({
    name: 'secrets',
    server: {
      command: serverCommand(failFile, expectedFile),
      env: { HF_TOKEN: secretEnv, MY_PASSWORD: SECRETS.password, NCCL_PROTO: 'LL' },
      readyTimeout: '5m',
    },
    trials: 2,
  });
  const file = writeExperiment(dir, 'exp.yaml', experiment(SECRETS.env));

  // 1. The server fails to start: the run stays unfinished (its failure message holds the launch error).
  writeFileSync(failFile, '');
  const failed = await cli(['run', file], { store });
  assert.notEqual(failed.code, 0, failed.stderr);
  assertNoLeak('stderr of a failed run', failed.stderr);

  // 2. The file changed (another token): the stored markers no longer match, the resume refuses.
  rmSync(failFile);
  writeExperiment(dir, 'exp.yaml', experiment('hf_SECRETother0123456789abc'));
  const changed = await cli(['run', '--resume', '1'], { store });
  assert.equal(changed.code, 1);
  assert.match(changed.stderr, /changed since the run started/);

  // 3. The same file again: the resume launches with the real secrets (the wrapper checks) and finishes.
  writeExperiment(dir, 'exp.yaml', experiment(SECRETS.env));
  const resumed = await cli(['run', '--resume', '1'], { store });
  assert.equal(resumed.code, 0, resumed.stderr);
  assertNoLeak('stdout/stderr of the run', resumed.stdout + resumed.stderr);

  const shown = await cli(['show', '1', '--json'], { store });
  assert.equal(shown.code, 0, shown.stderr);
  const { env } = (JSON.parse(shown.stdout) as { run: { config: { variants: Array<{ server: { env: Record<string, string> } }> } } }).run.config.variants[0]!
    .server;
  assert.match(env.HF_TOKEN!, /^<redacted:[0-9a-f]{12}>$/);
  assert.equal(env.NCCL_PROTO, 'LL');
  const listed = await cli(['ls', '--json'], { store });
  const diffed = await cli(['diff', '1', '1', '--json'], { store });
  const reported = await cli(['report', '1', '--out', join(dir, 'report')], { store });
  assert.equal(reported.code, 0, reported.stderr);
  for (const [what, output] of Object.entries({ show: shown.stdout, ls: listed.stdout, diff: diffed.stdout, report: reported.stdout }))
    assertNoLeak(what, output);

  // A server log line with a secret (servers print their args): the UI redacts it on the way out.
  const logs = filesUnder(join(dir, 'store', 'logs'));
  assert.ok(logs.length > 0);
  assert.ok(readFileSync(logs[0]!, 'utf8').includes('--- servelab launch'));
  for (const log of logs) assertNoLeak(log, readFileSync(log, 'utf8'));
  appendFileSync(logs.at(-1)!, `args: api_key=${SECRETS.apiKey} HF_TOKEN=${SECRETS.env} ${SECRETS.bearer}\n`);

  const ui = await startUi({ storePath: store, host: '127.0.0.1', port: 0 });
  t.after(() => ui.close());
  const bodies: string[] = [];
  for (const path of ['/', '/app.js', '/api/experiments', '/api/runs/1', '/api/diff?a=1&b=1', ...[1, 2, 3].map((id) => `/api/servers/${id}/log`)]) {
    const response = await fetch(new URL(path, ui.url));
    bodies.push(await response.text());
    assertNoLeak(`ui ${path}`, bodies.at(-1)!);
  }
  assert.ok(
    bodies.some((body) => body.includes('<redacted:')),
    'the log endpoint shows markers',
  );

  // Another token in a second run: diff still tells that it changed, without showing either.
  const otherToken = 'hf_SECRETsecond0123456789abc';
  writeFileSync(expectedFile, `${otherToken}|${SECRETS.password}|${SECRETS.apiKey}`);
  const second = await cli(['run', writeExperiment(dir, 'exp2.yaml', experiment(otherToken))], { store });
  assert.equal(second.code, 0, second.stderr);
  const changes = await cli(['diff', '1', '2'], { store });
  assert.match(changes.stdout, /HF_TOKEN/);
  assertNoLeak('diff of two tokens', changes.stdout);

  for (const path of [...filesUnder(join(dir, 'store')), ...filesUnder(join(dir, 'report'))]) {
    if (path === logs.at(-1)) continue; // the line appended above, on purpose
    assertNoLeak(path, readFileSync(path).toString('latin1'));
  }
});

test("an experiment's fingerprint.redact names are hidden in every sink: config, show, log header, stored command line, UI log; units stay readable", {
  timeout: 120_000,
}, async (t) => {
  const dir = tempDir(t, 'redaction-user');
  const store = join(dir, 'store', 'servelab.db');
  const userKey = 'kvSECRETuser';
  const pass = 'mypassSECRET';
  // Not exec'd: the shell stays the server's pid, so its command line (with --mykey) is what servers.pid_cmdline records.
  const script = `"${process.execPath}" "${SERVELAB}" simulate --port "$1" --load-ms 50 --tpot-ms 2 --ttft-ms 5 --jitter 0.02`;
  const file = writeExperiment(dir, 'exp.yaml', {
    name: 'user-secrets',
    server: {
      command: [
        'sh',
        '-c',
        script,
        'sim',
        '{port}',
        '--mykey',
        userKey,
        '--prefill-ms-per-token',
        '0.5',
        '--bypass-x',
        '1',
        '--max-num-batched-tokens',
        '8192',
      ],
      env: { MY_PASS: pass },
      readyTimeout: '5m',
    },
    fingerprint: { redact: ['MYKEY'] },
    trials: 1,
  });
  const ran = await cli(['run', file], { store });
  assert.equal(ran.code, 0, ran.stderr);
  assertNoLeak('stdout/stderr of the run', ran.stdout + ran.stderr);

  const shown = await cli(['show', '1', '--json'], { store });
  assert.equal(shown.code, 0, shown.stderr);
  assertNoLeak('show --json', shown.stdout);
  const { server } = (JSON.parse(shown.stdout) as { run: { config: { variants: Array<{ server: { command: string[] } }> } } }).run.config.variants[0]!;
  const flag = (name: string) => server.command[server.command.indexOf(name) + 1];
  assert.match(flag('--mykey')!, /^<redacted:[0-9a-f]{12}>$/);
  assert.deepEqual([flag('--prefill-ms-per-token'), flag('--bypass-x'), flag('--max-num-batched-tokens')], ['0.5', '1', '8192']);

  const logs = filesUnder(join(dir, 'store', 'logs'));
  const header = readFileSync(logs[0]!, 'utf8')
    .split('\n')
    .find((line) => line.startsWith('--- servelab launch'))!;
  assert.match(header, /--mykey <redacted:[0-9a-f]{12}> --prefill-ms-per-token 0\.5 --bypass-x 1/);
  // The SQLite file holds runs.config_json, servers.pid_cmdline and the fingerprints: none may hold either secret.
  for (const path of filesUnder(join(dir, 'store'))) assertNoLeak(path, readFileSync(path).toString('latin1'));

  // A server printing its own arguments: the UI hides the run's names too (the file is the server's own).
  appendFileSync(logs[0]!, `non-default args: {'mykey': '${userKey}'} mykey=${userKey}\n`);
  const ui = await startUi({ storePath: store, host: '127.0.0.1', port: 0 });
  t.after(() => ui.close());
  const body = await (await fetch(new URL('/api/servers/1/log', ui.url))).text();
  assertNoLeak('ui log', body);
  assert.match(body, /non-default args/);
});
