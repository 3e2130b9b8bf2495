import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type RequestListener } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LocalExecutor } from '../src/exec/local.js';
import { SERVER_FILE_SETTINGS } from '../src/launch/server-schema.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import { NotReadyError } from '../src/ready/errors.js';
import { DEFAULT_POLL_SCHEDULE } from '../src/ready/schedule.js';
import { waitForReady } from '../src/ready/wait.js';
import { FLAG_SETTINGS, initialState, type SettingNames, transition, type WaitContext, type WaitEvent, type WaitState } from '../src/ready/wait-machine.js';

const BIN = fileURLToPath(new URL('../../bin/servelab.js', import.meta.url));
const openai = BUILTIN_PROFILES.openai!;

function contextWith(names: SettingNames, timeoutMs = 10_000): WaitContext {
  return { baseUrl: 'http://127.0.0.1:9', profile: openai, timeoutMs, schedule: DEFAULT_POLL_SCHEDULE, names, previousReadyMs: 42_000 };
}

/** Run events through the pure transition, collecting the effects. */
function run(events: WaitEvent[], context = contextWith(FLAG_SETTINGS)): { state: WaitState; effects: string[] } {
  let state = initialState(0);
  const effects: string[] = [];
  for (const event of events) {
    const step = transition(state, event, context);
    state = step.state;
    effects.push(...step.effects);
  }
  return { state, effects };
}

const loading: WaitEvent = { type: 'checked', outcome: { type: 'not-ready', state: 'waiting for health', detail: '503: loading' }, atMs: 100 };

describe('readiness state machine (pure transitions)', () => {
  test('not ready: sleep with a growing delay; a new log phase wakes at once and resets it; the same phase changes nothing', () => {
    const first = run([loading]);
    assert.deepEqual(first.state.status, { kind: 'sleeping', delayMs: 20 });
    assert.deepEqual(first.effects, ['report']);
    const second = run([loading, { type: 'woke' }, loading]);
    assert.deepEqual(second.state.status, { kind: 'sleeping', delayMs: 40 });
    const woken = run([loading, { type: 'monitor', event: { type: 'phase', name: 'loading weights' }, atMs: 120 }]);
    assert.deepEqual(woken.state.status, { kind: 'probing' });
    assert.deepEqual(woken.effects, ['report', 'report', 'wake']);
    assert.equal(woken.state.attempt, 0);
    const again = run([{ type: 'monitor', event: { type: 'phase', name: 'waiting for server' }, atMs: 5 }]);
    assert.deepEqual(again.effects, [], 'the current phase again is no change');
    assert.equal(again.state.wakePending, true, 'but the next round follows at once');
  });

  test('a log phase during a probe round skips the next sleep', () => {
    const { state } = run([{ type: 'monitor', event: { type: 'phase', name: 'loading weights' }, atMs: 50 }, loading]);
    assert.deepEqual(state.status, { kind: 'probing' });
    assert.equal(state.wakePending, false);
  });

  test('checks pass: confirm the listener, then ready; an impostor fails as wrong-server', () => {
    const passed: WaitEvent = { type: 'checked', outcome: { type: 'ready', model: 'm' }, atMs: 300 };
    assert.deepEqual(run([passed]).state.status, { kind: 'confirming', model: 'm' });
    assert.deepEqual(run([passed, { type: 'confirmed', atMs: 310 }]).state.status, { kind: 'ready', model: 'm', atMs: 310 });
    const impostor = run([passed, { type: 'confirmed', impostor: { message: 'port 9 is served by pid 1', hint: 'stop it' }, atMs: 310 }]);
    assert.equal(impostor.state.status.kind === 'failed' && impostor.state.status.failure.kind, 'wrong-server');
  });

  test('a failure is final: later events change nothing', () => {
    const exit: WaitEvent = { type: 'monitor', event: { type: 'exit', info: { code: 1, signal: null } }, atMs: 200 };
    const { state, effects } = run([exit, loading, { type: 'checked', outcome: { type: 'ready' }, atMs: 250 }]);
    assert.ok(state.status.kind === 'failed');
    assert.equal(state.status.failure.message, 'server exited with code 1 before becoming ready');
    assert.deepEqual(effects, ['stop', 'wake']);
  });

  test('hints name the caller settings: CLI flags or the experiment file keys', () => {
    const late: WaitEvent = { ...loading, atMs: 10_000 } as WaitEvent;
    const generation: WaitEvent = { type: 'checked', outcome: { type: 'wrong', check: 'generation', detail: '404' }, atMs: 10 };
    const models: WaitEvent = { type: 'checked', outcome: { type: 'wrong', check: 'models', detail: 'no list' }, atMs: 10 };
    const hint = (event: WaitEvent, names: SettingNames): string => {
      const { status } = run([event], contextWith(names)).state;
      assert.ok(status.kind === 'failed');
      return status.failure.hint;
    };
    assert.equal(hint(late, FLAG_SETTINGS), 'raise --timeout (the last startup of this config was ready after 42s), or check the server log');
    assert.equal(hint(late, SERVER_FILE_SETTINGS), 'raise server.readyTimeout (the last startup of this config was ready after 42s), or check the server log');
    assert.equal(hint(generation, FLAG_SETTINGS), 'give --model NAME for a model the server serves, or --no-verify to skip the generation check');
    assert.equal(
      hint(generation, SERVER_FILE_SETTINGS),
      'give server.model for a model the server serves, or server.verifyServing: false to skip the generation check',
    );
    assert.equal(hint(models, FLAG_SETTINGS), 'is this an OpenAI-compatible server? use --no-verify to check health only, or the right --profile');
    assert.equal(
      hint(models, SERVER_FILE_SETTINGS),
      'is this an OpenAI-compatible server? use server.verifyServing: false to check health only, or the right profile',
    );
  });
});

async function startHttp(t: TestContext, handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

async function notReady(promise: Promise<unknown>): Promise<NotReadyError> {
  const error = await promise.then(
    () => assert.fail('expected the wait to fail'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof NotReadyError, String(error));
  return error;
}

describe('readiness hints against real servers', () => {
  test('waitForReady words the timeout hint with the names it is given', async (t) => {
    const url = await startHttp(t, (_req, res) => res.writeHead(503).end('loading'));
    const flags = await notReady(waitForReady({ baseUrl: url, profile: openai, timeoutMs: 300 }));
    assert.equal(flags.hint, 'raise --timeout, or check the server log');
    const file = await notReady(waitForReady({ baseUrl: url, profile: openai, timeoutMs: 300, settingNames: SERVER_FILE_SETTINGS }));
    assert.equal(file.kind, 'timeout');
    assert.equal(file.hint, 'raise server.readyTimeout, or check the server log');
  });

  test("an executor (what `servelab run` launches through) names the experiment file's keys", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'servelab-ready-names-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const executor = new LocalExecutor();
    const launch = executor.launch(
      {
        command: [process.execPath, BIN, 'simulate', '--port', '{port}', '--load-ms', '60000'],
        env: {},
        profile: BUILTIN_PROFILES.simulator!,
        logPath: join(dir, 'server.log'),
        readyTimeoutMs: 1_500,
      },
      {},
    );
    const error = await notReady(launch);
    assert.equal(error.kind, 'timeout');
    assert.match(error.hint, /^raise server\.readyTimeout, or check the server log$/);
  });
});
