import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { configKey } from '../src/launch/config.js';
import { signalChild } from '../src/util/child-signal.js';
import { processIdentity, sameProcess } from '../src/util/proc-identity.js';
import { containsMarker, MASKING, Redactor, redactor } from '../src/util/redact.js';

const secrets = new Redactor('test-salt');
const marker = (value: string): string => secrets.value(value);

describe('Redactor markers', () => {
  test('a salted 12-hex HMAC: hides the value, differs per value and per salt, stable otherwise, idempotent', () => {
    assert.match(marker('hf_abcdef'), /^<redacted:[0-9a-f]{12}>$/);
    assert.ok(!marker('hf_abcdef').includes('abcdef'));
    assert.notEqual(marker('a'), marker('b'));
    assert.equal(marker('a'), new Redactor('test-salt').value('a'));
    assert.notEqual(marker('a'), new Redactor('other-salt').value('a'));
    assert.equal(secrets.value(marker('a')), marker('a'));
    assert.ok(containsMarker({ x: [marker('a')] }));
    assert.ok(!containsMarker({ x: ['<redacted:zz>'] }));
  });
});

describe('Redactor.args', () => {
  test('separate and = forms, -k, --auth, --token, --password; non-secret flags untouched', () => {
    const argv = [
      'vllm',
      'serve',
      'm',
      '--api-key',
      'sk-1',
      '--hf-token=hf_2',
      '-k',
      'k3',
      '--auth',
      'a4',
      '--token',
      't5',
      '--password=p6',
      '--max-num-batched-tokens',
      '8192',
      '--port',
      '{port}',
      '--tokenizer',
      'tok',
    ];
    assert.deepEqual(secrets.args(argv), [
      'vllm',
      'serve',
      'm',
      '--api-key',
      marker('sk-1'),
      `--hf-token=${marker('hf_2')}`,
      '-k',
      marker('k3'),
      '--auth',
      marker('a4'),
      '--token',
      marker('t5'),
      `--password=${marker('p6')}`,
      '--max-num-batched-tokens',
      '8192',
      '--port',
      '{port}',
      '--tokenizer',
      'tok',
    ]);
  });

  test('a secret-named boolean flag does not swallow the next flag', () => {
    assert.deepEqual(secrets.args(['server', '--use-auth-token', '--model', 'x']), ['server', '--use-auth-token', '--model', 'x']);
  });

  test('JSON-embedded keys, URL credentials, shaped values inside any argument', () => {
    const [json, url, shaped] = secrets.args([
      '{"api_key": "s3cr3t-json", "model": "m", "num_speculative_tokens": 3}',
      'https://alice:pa55word@hub.example/x',
      'hf_AbCdEfGhIjKlMnOpQrSt',
    ]);
    assert.equal(json, `{"api_key": "${marker('s3cr3t-json')}", "model": "m", "num_speculative_tokens": 3}`);
    assert.equal(url, `https://alice:${marker('pa55word')}@hub.example/x`);
    assert.equal(shaped, marker('hf_AbCdEfGhIjKlMnOpQrSt'));
  });
});

describe('Redactor.text and deep', () => {
  test('log lines: headers, env assignments, bearer tokens, python-dict args', () => {
    const line =
      "--- servelab launch: HF_TOKEN=hf_zzzzzzzzzzzzzzzzzzzz srv --api-key sk-abcdefghijklmnopqrst -k kk --port 8000 Authorization: Bearer tok.en-123 args={'api_key': 'dictsecret'}";
    const out = secrets.text(line);
    for (const secret of ['hf_zzzz', 'sk-abcdefgh', ' kk ', 'tok.en-123', 'dictsecret']) assert.ok(!out.includes(secret), `${secret} in ${out}`);
    assert.ok(out.includes('--port 8000'));
    assert.ok(!secrets.text('authorization: Basic dXNlcjpwYXNz').includes('dXNlcjpwYXNz'));
    assert.equal(secrets.text('Token throughput and Basic setup'), 'Token throughput and Basic setup');
    assert.equal(
      secrets.text('MAX_NUM_BATCHED_TOKENS=8192 TOKENIZERS_PARALLELISM=false AUTHOR=me'),
      'MAX_NUM_BATCHED_TOKENS=8192 TOKENIZERS_PARALLELISM=false AUTHOR=me',
    );
  });

  test('deep: env maps by name, argvs, free strings; structural keys such as serverKey stay', () => {
    const value = {
      serverKey: 'abc123',
      server: { command: ['x', '--api-key', 'v1'], env: { HF_TOKEN: 'v2', NCCL_PROTO: 'LL' } },
      message: 'see https://u:v3@h/',
    };
    assert.deepEqual(secrets.deep(value), {
      serverKey: 'abc123',
      server: { command: ['x', '--api-key', marker('v1')], env: { HF_TOKEN: marker('v2'), NCCL_PROTO: 'LL' } },
      message: `see https://u:${marker('v3')}@h/`,
    });
  });

  test('whole words decide: PASS as a word is a secret, BYPASS is not; a PER_ unit is a rate, not a credential', () => {
    const user = secrets.withPatterns(['MYKEY']);
    const argv = ['--hf-token', 'h1', '--api-key', 'a2', '--mykey', 'm3', '--db-pass', 'p4', '--prefill-ms-per-token', '0.5'];
    const readable = ['--max-num-batched-tokens', '8192', '--bypass-x', '1', '--tokens-per-key', '4'];
    assert.deepEqual(user.args([...argv, ...readable]), [
      '--hf-token',
      marker('h1'),
      '--api-key',
      marker('a2'),
      '--mykey',
      marker('m3'),
      '--db-pass',
      marker('p4'),
      '--prefill-ms-per-token',
      '0.5',
      ...readable,
    ]);
    assert.deepEqual(secrets.env({ MY_PASS: 'x', PASS: 'y', BYPASS_CACHE: '1', PASSES: '3', SPEC_MS_PER_TOKEN: '0.5' }), {
      MY_PASS: marker('x'),
      PASS: marker('y'),
      BYPASS_CACHE: '1',
      PASSES: '3',
      SPEC_MS_PER_TOKEN: '0.5',
    });
    // The user's patterns are taken as written, units included.
    assert.equal(secrets.withPatterns(['*PER_TOKEN']).env({ MS_PER_TOKEN: 'x' }).MS_PER_TOKEN, marker('x'));
  });

  test("extra patterns (an experiment's fingerprint.redact) add to the defaults", () => {
    assert.deepEqual(secrets.withPatterns(['MY_*']).env({ MY_THING: 'x', HF_TOKEN: 'y', OTHER: 'z' }), {
      MY_THING: marker('x'),
      HF_TOKEN: marker('y'),
      OTHER: 'z',
    });
  });
});

describe('startup-history keys', () => {
  test('hash no secret: the same config with another token has the same key, other changes a new one', () => {
    const key = (token: string, proto = 'LL') =>
      configKey({ command: ['srv', '--api-key', token], env: { HF_TOKEN: token, NCCL_PROTO: proto }, profile: 'vllm' });
    assert.equal(MASKING.value('a'), '<redacted>');
    assert.equal(key('sk-one'), key('sk-two'));
    assert.notEqual(key('sk-one'), key('sk-one', 'Simple'));
  });
});

describe('stored command lines (servers.pid_cmdline)', () => {
  test("a line stored with a run's fingerprint.redact names still identifies the live process; another process does not match", async (t) => {
    const child = spawn('sh', ['-c', 'sleep 30', 'sh', '--mykey', 'kv1', '--port', '8000'], { stdio: 'ignore' });
    t.after(() => signalChild(child, 'SIGKILL'));
    await new Promise((resolve) => child.once('spawn', resolve));
    const pid = child.pid!;
    const current = processIdentity(pid)!;
    assert.match(current.cmdline, /--mykey kv1/);
    const stored = { start: current.start, cmdline: redactor().withPatterns(['MYKEY']).args(current.cmdline.split(' ')).join(' ') };
    assert.match(stored.cmdline, /--mykey <redacted:[0-9a-f]{12}> --port 8000/);
    assert.ok(sameProcess(pid, stored));
    assert.ok(!sameProcess(pid, { ...stored, cmdline: stored.cmdline.replace('8000', '8001') }));
    assert.ok(!sameProcess(pid, { ...stored, start: `${current.start}0` }));
  });
});
