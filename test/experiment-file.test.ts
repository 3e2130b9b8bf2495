import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseBenchArgv } from '../src/cli/commands/bench.js';
import { benchOptionsOf } from '../src/experiment/run/trial.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { higherIsBetter, metricUnit } from '../src/experiment/spec/metrics.js';
import type { RunningServer } from '../src/launch/types.js';
import type { ClientOptions } from '../src/load/types.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';
import {
  DEFAULT_INPUT_TOKENS,
  DEFAULT_LOAD_WORKERS,
  DEFAULT_MAX_FAILED_FRACTION,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_PROMPT_SEED,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_SYNTHETIC_OUTPUT_TOKENS,
  DEFAULT_WARMUP_REQUESTS,
} from '../src/util/defaults.js';
import { UserError } from '../src/util/errors.js';
import { cli, tempDir } from './support-experiment.js';

const BASE = `
name: eagle
profile: vllm
server:
  command: vllm serve meta-llama/Llama-3.1-8B-Instruct --port {port}
  env: { NCCL_PROTO: LL, NCCL_ALGO: Ring }
workloads:
  - { kind: single-stream, requests: 8 }
`;

function expectError(path: string, pattern: RegExp): void {
  assert.throws(
    () => loadExperiment(path),
    (error: unknown) => {
      assert.ok(error instanceof UserError, String(error));
      assert.match(error.message, pattern);
      assert.ok(error.message.includes(path), `names the file: ${error.message}`);
      return true;
    },
  );
}

describe('experiment file', () => {
  test('variants set and unset env and append args; identical server configs share a server key', (t) => {
    const dir = tempDir(t, 'expfile');
    const path = join(dir, 'exp.yaml');
    writeFileSync(
      path,
      `${BASE}
variants:
  baseline: {}
  no-nccl-tuning: { unsetEnv: [NCCL_PROTO, NCCL_ALGO] }
  eagle3-steps2:
    args: [--speculative-config, '{"method":"eagle3","num_speculative_tokens":2}']
    env: { VLLM_USE_V1: 1 }
  long-prompts:
    client: { prompts: { kind: synthetic, inputTokens: 2048, outputTokens: 128 } }
`,
    );
    const experiment = loadExperiment(path);
    const byName = Object.fromEntries(experiment.variants.map((variant) => [variant.name, variant]));
    assert.equal(experiment.baseline, 'baseline');
    assert.deepEqual(byName['no-nccl-tuning']!.server.env, {});
    assert.deepEqual(byName['no-nccl-tuning']!.server.unsetEnv, ['NCCL_ALGO', 'NCCL_PROTO']);
    assert.deepEqual(byName['eagle3-steps2']!.server.command.slice(-2), ['--speculative-config', '{"method":"eagle3","num_speculative_tokens":2}']);
    assert.equal(byName['eagle3-steps2']!.server.env.VLLM_USE_V1, '1');
    assert.equal(byName['eagle3-steps2']!.server.env.NCCL_PROTO, 'LL');
    // A client-side-only variant reuses the baseline's server.
    assert.equal(byName['long-prompts']!.serverKey, byName.baseline!.serverKey);
    assert.notEqual(byName['eagle3-steps2']!.serverKey, byName.baseline!.serverKey);
    assert.notEqual(byName['no-nccl-tuning']!.serverKey, byName.baseline!.serverKey);
    assert.deepEqual(byName['long-prompts']!.client.prompts, {
      kind: 'synthetic',
      inputTokens: { kind: 'fixed', value: 2048 },
      outputTokens: { kind: 'fixed', value: 128 },
      seed: 0,
    });
  });

  test('trial validity: maxFailedFraction defaults to 0 and trialRetries to 2; both are checked', (t) => {
    const dir = tempDir(t, 'expfile');
    const plain = join(dir, 'plain.yaml');
    writeFileSync(plain, BASE);
    assert.deepEqual(loadExperiment(plain).validity, { maxFailedFraction: 0, trialRetries: 2 });
    const tolerant = join(dir, 'tolerant.yaml');
    writeFileSync(tolerant, `${BASE}maxFailedFraction: 0.05\ntrialRetries: 0\n`);
    assert.deepEqual(loadExperiment(tolerant).validity, { maxFailedFraction: 0.05, trialRetries: 0 });
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, `${BASE}maxFailedFraction: 1.5\n`);
    expectError(bad, /maxFailedFraction/);
  });

  test('a grid expands into one variant per combination, and a sweep into one workload per concurrency', (t) => {
    const dir = tempDir(t, 'expfile');
    const path = join(dir, 'exp.yaml');
    writeFileSync(
      path,
      `${BASE.replace('  - { kind: single-stream, requests: 8 }', '  - { kind: sweep, concurrencies: [1, 8, 32], requestsPerLevel: 32 }')}
variants:
  baseline: {}
grid:
  - name: eagle3-s{steps}-d{draft}
    params: { steps: [2, 3], draft: [4, 8] }
    args: [--speculative-config, '{"num_speculative_tokens":{draft},"steps":{steps}}']
`,
    );
    const experiment = loadExperiment(path);
    assert.deepEqual(
      experiment.variants.map((variant) => variant.name),
      ['baseline', 'eagle3-s2-d4', 'eagle3-s2-d8', 'eagle3-s3-d4', 'eagle3-s3-d8'],
    );
    const point = experiment.variants.find((variant) => variant.name === 'eagle3-s3-d8')!;
    assert.deepEqual(point.params, { steps: 3, draft: 8 });
    assert.equal(point.server.command.at(-1), '{"num_speculative_tokens":8,"steps":3}');
    assert.equal(point.server.command.includes('{port}'), true, '{port} is left for the launcher');
    assert.deepEqual(
      experiment.workloads.map((workload) => workload.label),
      ['c=1', 'c=8', 'c=32'],
    );
    assert.deepEqual(experiment.workloads[1]!.workload, { kind: 'concurrency', concurrency: 8, requests: 32 });
    // Fewer requests than a level's concurrency never have that many in flight: the label would not be true.
    writeFileSync(path, BASE.replace('  - { kind: single-stream, requests: 8 }', '  - { kind: sweep, concurrencies: [1, 8, 32], requestsPerLevel: 16 }'));
    assert.throws(() => loadExperiment(path), /exp\.yaml:\d+: workloads\[0\]\.requestsPerLevel: needs at least the highest concurrency/);
    writeFileSync(path, BASE.replace('  - { kind: single-stream, requests: 8 }', '  - { kind: concurrency, concurrency: 8, requests: 2 }'));
    assert.throws(() => loadExperiment(path), /exp\.yaml:\d+: workloads\[0\]\.requests: needs at least concurrency requests/);
  });

  test('errors name the file, the line and the key', (t) => {
    const dir = tempDir(t, 'expfile');
    const write = (name: string, text: string): string => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    expectError(write('profile.yaml', BASE.replace('profile: vllm', 'profile: vlm')), /profile\.yaml:3: profile: expected a built-in profile/);
    expectError(write('env.yaml', `${BASE}variants:\n  fast:\n    env: { NCCL_PROTO: [LL] }\n`), /env\.yaml:\d+: variants\.fast\.env\.NCCL_PROTO:/);
    expectError(
      write('unset.yaml', `${BASE}variants:\n  fast:\n    unsetEnv: ["NCCL PROTO"]\n`),
      /variants\.fast\.unsetEnv\[0\]: expected an environment variable name/,
    );
    expectError(
      write('typo.yaml', `${BASE}variants:\n  fast:\n    arg: [--x]\n`),
      /typo\.yaml:11: variants\.fast\.arg: unknown key "arg" \(did you mean "args"\?\)/,
    );
    expectError(write('baseline.yaml', `${BASE}baseline: base\nvariants:\n  baseline: {}\n`), /baseline: unknown variant "base"/);
    expectError(write('grid.yaml', `${BASE}grid:\n  - name: spec\n    params: { steps: [2, 3] }\n`), /grid\[0\]\.name: must contain \{steps\}/);
    expectError(write('trials.yaml', `${BASE}trials: 0\n`), /trials\.yaml:\d+: trials:/);
    expectError(write('workloads.yaml', BASE.replace('  - { kind: single-stream, requests: 8 }', '  []').replace('workloads:\n', 'workloads:')), /workloads/);
    expectError(
      write('kind.yaml', BASE.replace('kind: single-stream', 'kind: singlestream')),
      /kind\.yaml:\d+: workloads\[0\]\.kind: expected kind: single-stream, concurrency/,
    );
    expectError(write('duration.yaml', BASE.replace('  env:', '  readyTimeout: soon\n  env:')), /server\.readyTimeout: invalid duration "soon"/);
  });

  test('validated before any server starts: grid names, env names, dataset paths, numeric bounds', (t) => {
    const dir = tempDir(t, 'expcheck');
    const write = (name: string, text: string): string => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    const grid = (name: string) => `${BASE}grid:\n  - name: '${name}'\n    params: { k: [1] }\n`;
    expectError(write('grid-html.yaml', grid('g-<img src=x onerror=alert(1)>{k}')), /grid\[0\]\.name: expected a variant name .*got "g-<img/);
    expectError(write('grid-path.yaml', grid('g-../../x{k}')), /grid\[0\]\.name: expected a variant name/);
    expectError(write('env-eq.yaml', BASE.replace('NCCL_PROTO: LL', '"A=B": LL')), /server\.env\.A=B: expected an environment variable name/);
    expectError(
      write('tokens.yaml', `${BASE}client:\n  prompts: { kind: synthetic, inputTokens: 1000000000000, outputTokens: 8 }\n`),
      /client\.prompts.*at most 10000000 tokens/,
    );
    expectError(
      write('rate.yaml', BASE.replace('{ kind: single-stream, requests: 8 }', '{ kind: rate, requestsPerSecond: 1.0e-9, maxInFlight: 4, requests: 8 }')),
      /requestsPerSecond: expected at least 0\.001/,
    );
    expectError(
      write(
        'gamma.yaml',
        BASE.replace('{ kind: single-stream, requests: 8 }', '{ kind: rate, requestsPerSecond: 4, arrival: gamma, maxInFlight: 4, requests: 8 }'),
      ),
      /workloads\[0\]\.burstiness: only gamma arrivals take a burstiness, and they need one/,
    );
    const bursty = loadExperiment(
      write(
        'gamma-ok.yaml',
        BASE.replace(
          '  - { kind: single-stream, requests: 8 }',
          '  - { kind: rate, requestsPerSecond: 4, maxInFlight: 4, requests: 8 }\n  - { kind: rate, requestsPerSecond: 4, arrival: gamma, burstiness: 0.5, maxInFlight: 4, requests: 8 }',
        ),
      ),
    );
    assert.deepEqual(
      bursty.workloads.map((workload) => workload.label),
      ['rate=4/s', 'rate=4/s,burstiness=0.5'],
    );
    expectError(
      write('energy.yaml', `${BASE}metric: joulesPerToken\ntelemetry: { enabled: false }\n`),
      /telemetry\.enabled: joulesPerToken needs the GPU power readings/,
    );
    expectError(write('cost.yaml', `${BASE}objective: { minimize: usdPerMillionTokens }\n`), /cost: usdPerMillionTokens needs cost: \{ gpuHourUsd: … \}/);
    const priced = loadExperiment(
      write(
        'priced.yaml',
        `${BASE}objective: { minimize: joulesPerToken, subjectTo: { usdPerMillionTokens: "< 2" } }\ncost: { gpuHourUsd: 2.5 }\nbudget: { gpuHours: 1, gpusPerServer: 4 }\n`,
      ),
    );
    assert.deepEqual([priced.cost, priced.objective?.metric, priced.objective?.direction], [{ gpuHourUsd: 2.5, gpus: 4 }, 'joulesPerToken', 'minimize']);
    assert.deepEqual(
      (['joulesPerToken', 'tokensPerJoule', 'usdPerMillionTokens'] as const).map((metric) => [higherIsBetter(metric), metricUnit(metric)]),
      [
        [false, 'J/tok'],
        [true, 'tok/J'],
        [false, '$/Mtok'],
      ],
    );
    expectError(
      write('dataset.yaml', `${BASE}client:\n  prompts: { kind: jsonl, path: prompts.jsonl }\n`),
      new RegExp(`client\\.prompts\\.path: no such file: ${join(dir, 'prompts.jsonl').replace(/[.\\/]/g, '\\$&')}`),
    );
    // Relative to the experiment file, not to the current directory.
    writeFileSync(join(dir, 'prompts.jsonl'), '{"prompt": "hi"}\n');
    const loaded = loadExperiment(write('dataset-ok.yaml', `${BASE}client:\n  prompts: { kind: jsonl, path: prompts.jsonl }\n`));
    assert.deepEqual(loaded.variants[0]!.client.prompts, { kind: 'jsonl', path: join(dir, 'prompts.jsonl'), seed: 0 });
  });

  test("errors are in the author's words: unknown keys at their own line with a did-you-mean, missing keys named, forms listed", (t) => {
    const dir = tempDir(t, 'expfile');
    const write = (name: string, text: string): string => {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    };
    // BASE starts with an empty line and has 8 lines: line 9 is the first one after it.
    expectError(
      write('trails.yaml', `${BASE}trails: 3\n`),
      /trails\.yaml:9: trails: unknown key "trails" \(did you mean "trials"\?\); keys allowed here: name, description, profile, server/,
    );
    expectError(
      write('alpha.yaml', `${BASE}verdict:\n  minEffect: 0.02\n  alpah: 0.1\n`),
      /alpha\.yaml:11: verdict\.alpah: unknown key "alpah" \(did you mean "alpha"\?\)/,
    );
    expectError(
      write('prompts.yaml', `${BASE}client:\n  prompts:\n    kind: synthetic\n    inputTokens: 16\n    outputTokns: 8\n`),
      /prompts\.yaml:13: client\.prompts\.outputTokns: unknown key "outputTokns" \(did you mean "outputTokens"\?\)/,
    );
    // A misspelt required key: the unknown key is the cause, not "expected number, received undefined".
    expectError(
      write('concurrency.yaml', BASE.replace('{ kind: single-stream, requests: 8 }', '{ kind: concurrency, concurency: 8, requests: 8 }')),
      /workloads\[0\]\.concurency: unknown key "concurency" \(did you mean "concurrency"\?\)/,
    );
    expectError(
      write('missing.yaml', BASE.replace('{ kind: single-stream, requests: 8 }', '{ kind: concurrency, requests: 8 }')),
      /missing\.yaml:8: workloads\[0\]\.concurrency: missing key "concurrency" \(expected a number\)/,
    );
    expectError(write('list.yaml', `${BASE}variants: [a, b]\n`), /list\.yaml:9: variants: expected a mapping of name → value, got a list$/);
    expectError(
      write('minutes.yaml', BASE.replace('  env:', '  readyTimeout: 5 minutes\n  env:')),
      /server\.readyTimeout: invalid duration "5 minutes": use e\.g\. 90s, 20m, 1h, 500ms or a number of seconds/,
    );
    expectError(write('metric.yaml', `${BASE}metric: tokps\n`), /metric: expected one of "outputTokensPerSecond", "requestsPerSecond"/);
    expectError(write('zero.yaml', BASE.replace('requests: 8', 'requests: 0')), /workloads\[0\]\.requests: expected more than 0, got 0/);
  });

  test('every problem of a file is reported at once, each at its line, in file order; a misspelt key is one problem', (t) => {
    const dir = tempDir(t, 'expfile');
    const path = join(dir, 'several.yaml');
    // BASE has 8 lines after its empty first one: line 9 is the first added.
    writeFileSync(
      path,
      `${BASE.replace('{ kind: single-stream, requests: 8 }', '{ kind: concurrency, concurency: 8, requests: 8 }')}trials: 0\nverdict:\n  alpah: 0.1\nmetric: tokps\n`,
    );
    const error = (() => {
      try {
        loadExperiment(path);
      } catch (thrown) {
        return thrown;
      }
      return undefined;
    })();
    assert.ok(error instanceof UserError, String(error));
    const lines = error.message.split('\n');
    assert.equal(lines[0], `${path}: 4 problems:`, error.message);
    assert.match(lines[1]!, /several\.yaml:8: workloads\[0\]\.concurency: unknown key "concurency" \(did you mean "concurrency"\?\)/);
    assert.match(lines[2]!, /several\.yaml:9: trials: expected at least 1, got 0$/);
    assert.match(lines[3]!, /several\.yaml:11: verdict\.alpah: unknown key "alpah" \(did you mean "alpha"\?\)/);
    assert.match(lines[4]!, /several\.yaml:12: metric: expected one of "outputTokensPerSecond"/);
    assert.equal(lines.length, 5, 'no "missing key concurrency" beside its misspelling');
    assert.equal(error.hint, `fix them in ${path}`);
    assert.equal(error.exitCode, 2);
  });

  test('an unknown key at any depth lists the keys allowed there, as at the top level', (t) => {
    const dir = tempDir(t, 'expfile');
    const cases: Array<[string, string, RegExp]> = [
      [
        'server',
        BASE.replace('  env:', '  comand: x\n  env:'),
        /server\.comand: unknown key "comand" \(did you mean "command"\?\); keys allowed here: command, env, unsetEnv/,
      ],
      ['workload', BASE.replace('requests: 8 }', 'requests: 8, reqs: 2 }'), /workloads\[0\]\.reqs: unknown key "reqs"; keys allowed here: kind, requests$/],
      [
        'rate',
        BASE.replace('{ kind: single-stream, requests: 8 }', '{ kind: rate, requestsPerSecond: 2, requests: 8, burst: 1 }'),
        /workloads\[0\]\.burst: unknown key "burst"; keys allowed here: kind, requestsPerSecond, arrival, burstiness, maxInFlight, requests$/,
      ],
      [
        'dataset',
        `${BASE}client:\n  prompts: { kind: jsonl, path: p.jsonl, sed: 1 }\n`,
        /client\.prompts\.sed: unknown key "sed" \(did you mean "seed"\?\); keys allowed here: kind, path, seed, shuffle/,
      ],
      [
        'length',
        `${BASE}client:\n  prompts: { kind: synthetic, inputTokens: { kind: fixed, value: 8, x: 1 }, outputTokens: 8 }\n`,
        /client\.prompts\.inputTokens\.x: unknown key "x"; keys allowed here: kind, value$/,
      ],
      [
        'variant-client',
        `${BASE}variants:\n  a:\n    client: { warmpu: 1 }\n`,
        /variants\.a\.client\.warmpu: unknown key "warmpu" \(did you mean "warmup"\?\); keys allowed here: prompts, warmupRequests, warmup/,
      ],
      [
        'executor',
        `${BASE}executor: { kind: ssh, host: h, hots: 1 }\n`,
        /executor\.hots: unknown key "hots" \(did you mean "host"\?\); keys allowed here: kind, host/,
      ],
    ];
    for (const [name, text, pattern] of cases) {
      const path = join(dir, `${name}.yaml`);
      writeFileSync(path, text);
      expectError(path, pattern);
    }
  });

  test("a file's defaults are the bench flags' (one defaults module): a rate workload's maxInFlight", (t) => {
    const dir = tempDir(t, 'expfile');
    const path = join(dir, 'rate.yaml');
    writeFileSync(path, BASE.replace('{ kind: single-stream, requests: 8 }', '{ kind: rate, requestsPerSecond: 2, requests: 8 }'));
    const fromFile = loadExperiment(path).workloads[0]!.workload;
    const fromFlags = parseBenchArgv(['bench', 'http://127.0.0.1:1', '--rate', '2', '--requests', '8']).options.workload;
    assert.equal(fromFile.kind, 'rate');
    assert.equal(fromFlags.kind, 'rate');
    assert.equal(fromFile.kind === 'rate' && fromFile.maxInFlight, DEFAULT_MAX_IN_FLIGHT);
    assert.equal(fromFlags.kind === 'rate' && fromFlags.maxInFlight, DEFAULT_MAX_IN_FLIGHT);
    assert.deepEqual(fromFile, fromFlags);
  });

  test('a default client section and a default bench command line measure alike (one defaults module)', (t) => {
    const dir = tempDir(t, 'expfile');
    const path = join(dir, 'exp.yaml');
    const url = 'http://127.0.0.1:1';
    // What a trial hands the load client: the variant's client on a running server (no model reported), warm cache.
    const fromFile = (text: string): ClientOptions => {
      writeFileSync(path, text);
      const experiment = loadExperiment(path);
      const server = { baseUrl: url, ready: {} } as unknown as RunningServer;
      const {
        baseUrl: _,
        requestTimeoutSetting: __,
        ...options
      } = benchOptionsOf(experiment.variants[0]!, experiment.workloads[0]!, BUILTIN_PROFILES[experiment.variants[0]!.server.profile]!, server, {
        record: 'warm',
      });
      return effective({ ...options, maxFailedFraction: experiment.validity!.maxFailedFraction });
    };
    const fromFlags = (...flags: string[]): ClientOptions => effective(parseBenchArgv(['bench', url, '--single-stream', '8', ...flags]).options);
    // Unset means the load client's default: one worker (load/run.ts), a short output invalid (levelValidity).
    const effective = (options: ClientOptions): ClientOptions => ({
      ...options,
      workers: options.workers ?? DEFAULT_LOAD_WORKERS,
      requireFullOutput: options.requireFullOutput ?? true,
    });

    const bench = fromFlags();
    assert.deepEqual(fromFile(BASE), bench);
    // Compared: backend (vllm's is bench's), workload, prompts (lengths, seed), warm-up, ignore_eos, full output,
    // token counts, failed fraction, request timeout, workers, spec metrics, model, SLO, prompt salt.
    assert.equal(bench.warmupRequests, DEFAULT_WARMUP_REQUESTS);
    assert.deepEqual(bench.prompts, {
      kind: 'synthetic',
      inputTokens: { kind: 'fixed', value: DEFAULT_INPUT_TOKENS },
      outputTokens: { kind: 'fixed', value: DEFAULT_SYNTHETIC_OUTPUT_TOKENS },
      seed: DEFAULT_PROMPT_SEED,
    });
    assert.equal(bench.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS);
    assert.equal(bench.maxFailedFraction, DEFAULT_MAX_FAILED_FRACTION);
    assert.equal(bench.ignoreEos, true);
    // A synthetic source that names one length takes the other's default, as a bench flag does.
    assert.deepEqual(fromFile(`${BASE}client: { prompts: { kind: synthetic, inputTokens: 1024 } }\n`), fromFlags('--input-len', '1024'));
    assert.deepEqual(fromFile(`${BASE}client: { prompts: { kind: synthetic } }\n`), bench);
  });

  test('`servelab run` with a bad file exits non-zero with file, key and next step, no stack trace', async (t) => {
    const dir = tempDir(t, 'expfile');
    const path = join(dir, 'bad.yaml');
    writeFileSync(path, `${BASE}trials: many\n`);
    const result = await cli(['run', path], { store: join(dir, 'store.db'), timeoutMs: 30_000 });
    assert.equal(result.code, 2, 'a bad file is a usage error');
    assert.match(result.stderr, /bad\.yaml:\d+: trials: expected a number, got "many"/);
    assert.match(result.stderr, /next: fix trials in /);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
  });
});
