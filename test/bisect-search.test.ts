import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type BisectConfig, type BisectObservation, type BisectState, resolve } from '../src/experiment/analysis/bisect.js';
import { aliasChains, screeningRows } from '../src/experiment/analysis/bisect-design.js';
import { bisectDifferences, withDifferences } from '../src/experiment/analysis/bisect-differences.js';
import type { ServerConfig } from '../src/experiment/spec/types.js';
import type { Fingerprint } from '../src/fingerprint/types.js';
import { mulberry32 } from '../src/util/random.js';

/**
 * The search alone, driven by a model of what restoring a subset recovers with 1% noise per trial: which
 * configurations each round measures, and what the answer names. Measured versions: test/bisect-rounds.test.ts
 * (the fake machine) and test/bisect-pair.test.ts (the simulator, real runs).
 */
const NAMES = ['NCCL_ALGO', 'NCCL_BUFFSIZE', 'NCCL_MAX_NCHANNELS', 'NCCL_NTHREADS', 'NCCL_P2P_LEVEL', 'NCCL_PROTO'];

/** Speed-up factors of restoring single settings, and joint ones (all members restored). */
type Model = Array<{ when: string[]; factor: number }>;

function search(model: Model, tolerance: number, names = NAMES, trials = 6) {
  const random = mulberry32(5);
  const speed = (members: readonly string[]): number =>
    model.filter((entry) => entry.when.every((name) => members.includes(name))).reduce((product, entry) => product * entry.factor, 1);
  const rounds: Array<{ round: number; configs: BisectConfig[] }> = [];
  const observations: BisectObservation[] = [];
  const state = (): BisectState => ({ differences: names, rounds, observations, alpha: 0.05, tolerance });
  let measured = 0;
  for (let round = 1; round < 10; round += 1) {
    const { next } = resolve(state());
    if (next.length === 0) break;
    const perConfig = Math.max(2, Math.ceil((2 * trials) / next.length));
    rounds.push({ round, configs: next });
    for (let block = 0; block < perConfig; block += 1) {
      // A block level common to the block's configurations (the machine's drift), then 1% noise per trial.
      const level = 100 * (1 + 0.05 * block);
      for (const config of next)
        observations.push({ round, block, members: config.members, value: level * speed(config.members) * (1 + 0.01 * (random() * 2 - 1)) });
      measured += next.length;
    }
  }
  return { rounds, measured, answer: resolve(state()).answer! };
}

const names = (effects: ReadonlyArray<{ members: string[] }>): string[] => effects.map((effect) => effect.members.join('+'));

describe('bisect search', () => {
  test('the screening designs: resolution IV (no pair aliased with a setting), the current and the reference configuration in each', () => {
    for (let factors = 1; factors <= 8; factors += 1) {
      const rows = screeningRows(factors);
      assert.ok(rows.some((row) => row.every((x) => x < 0)) && rows.some((row) => row.every((x) => x > 0)), `${factors}`);
      const columns = Array.from({ length: factors }, (_, column) => rows.map((row) => row[column]).join(','));
      assert.equal(new Set(columns).size, factors);
      for (const chain of aliasChains(rows)) assert.ok(!columns.includes(chain.column.join(',')), `${factors}: a pair aliased with a setting`);
    }
    assert.equal(screeningRows(6).length, 16);
    assert.equal(screeningRows(3).length, 8);
  });

  test('six differences of which two matter: one round of 16 configurations, the two named with effect and CI, the share, fewer trials than one at a time', () => {
    const { rounds, measured, answer } = search(
      [
        { when: ['NCCL_PROTO'], factor: 1.15 },
        { when: ['NCCL_ALGO'], factor: 1.08 },
        { when: ['NCCL_NTHREADS'], factor: 1.01 },
      ],
      0.05,
    );
    assert.equal(rounds.length, 1);
    assert.equal(rounds[0]!.configs.length, 16);
    assert.ok(measured < (NAMES.length + 2) * 6, `${measured} trials`);
    assert.deepEqual(names(answer.responsible), ['NCCL_PROTO', 'NCCL_ALGO']);
    const proto = answer.responsible[0]!;
    assert.ok(Math.abs(proto.change - (1 / 1.15 - 1)) < 0.01, String(proto.change));
    assert.ok(proto.changeLow! < proto.change && proto.change < proto.changeHigh!);
    assert.deepEqual(answer.interactions, []);
    // The 1% left is NCCL_NTHREADS, below the tolerance: listed with its effect.
    assert.ok(answer.negligible.some((effect) => effect.members[0] === 'NCCL_NTHREADS'));
    const { share, low, high } = answer.explained!;
    const truth = Math.log(1.15 * 1.08) / Math.log(1.15 * 1.08 * 1.01);
    assert.ok(Math.abs(share - truth) < 0.03 && low! < share && share < high!, `${share} vs ${truth}`);
  });

  test('two that matter only together: the interaction named with the joint effect, each apart near nothing, share 100%', () => {
    const { rounds, answer } = search([{ when: ['NCCL_ALGO', 'NCCL_PROTO'], factor: 1.2 }], 0.05);
    assert.deepEqual(answer.responsible, []);
    assert.equal(answer.interactions.length, 1);
    const pair = answer.interactions[0]!;
    assert.deepEqual(pair.members, [['NCCL_ALGO'], ['NCCL_PROTO']]);
    assert.ok(Math.abs(pair.joint.change - (1 / 1.2 - 1)) < 0.01);
    for (const apart of pair.apart) assert.ok(Math.abs(apart.change) < 0.02 && !apart.matters);
    assert.ok(Math.abs(answer.explained!.share - 1) < 0.05);
    // The 16-row design aliases each pair with others: a round of the chain's pairs told them apart.
    assert.equal(rounds.length, 2);
    assert.ok(rounds[1]!.configs.every((config) => config.why === 'pair'));
  });

  test('two settings alone: the full factorial names their interaction in one round', () => {
    const { rounds, answer } = search([{ when: ['A', 'B'], factor: 2 }], 0.05, ['A', 'B']);
    assert.equal(rounds.length, 1);
    assert.equal(rounds[0]!.configs.length, 4);
    assert.deepEqual(answer.interactions[0]?.members, [['A'], ['B']]);
  });

  test('more than eight differences: screened in groups, only the group that matters split', () => {
    const many = Array.from({ length: 32 }, (_, i) => `V${String(i).padStart(2, '0')}`);
    const { rounds, answer, measured } = search([{ when: ['V05'], factor: 1.3 }], 0.05, many);
    assert.equal(rounds[0]!.configs.length, 16);
    assert.deepEqual(names(answer.responsible), ['V05']);
    assert.ok(rounds.length >= 2 && rounds.length <= 3, `${rounds.length} rounds`);
    assert.ok(measured < (many.length + 2) * 6, `${measured} trials vs ${(many.length + 2) * 6}`);
  });

  test('a change below the tolerance: nothing named, the total said', () => {
    const { answer } = search([{ when: ['NCCL_PROTO'], factor: 1.01 }], 0.05);
    assert.deepEqual(answer.responsible, []);
    assert.equal(answer.total.matters, false);
  });
});

describe('bisect differences', () => {
  const fingerprint = (env: Record<string, string>, command: string[], packages: Record<string, string> = {}): Fingerprint => ({
    servelabVersion: '0',
    executor: 'local',
    host: { hostname: 'h', os: 'linux', kernel: 'k', cpuModel: 'c', cpus: 1, memoryGiB: 1 },
    gpus: [],
    command,
    env,
    packages,
  });

  test('variables and flags are settable, packages are listed as not, and a variant sets every difference explicitly', () => {
    const reference = fingerprint({ NCCL_PROTO: 'LL', NCCL_ALGO: 'Ring' }, ['sglang', '--tp', '8', '--chunked-prefill-size', '4096'], { sglang: '0.4.1' });
    const current = fingerprint({ NCCL_ALGO: 'Tree', HF_TOKEN: '<redacted:0123456789ab>' }, ['sglang', '--tp', '8', '--enable-x'], { sglang: '0.4.2' });
    const changes = [
      { key: 'command', before: 'x', after: 'y' },
      { key: 'env.NCCL_PROTO', before: 'LL' },
      { key: 'env.NCCL_ALGO', before: 'Ring', after: 'Tree' },
      { key: 'env.HF_TOKEN', after: '<redacted:0123456789ab>' },
      { key: 'packages.sglang', before: '0.4.1', after: '0.4.2' },
    ];
    const { settable, fixed } = bisectDifferences(changes, reference, current);
    assert.deepEqual(settable, [
      { name: '--chunked-prefill-size', kind: 'flag', reference: '4096' },
      { name: '--enable-x', kind: 'flag', current: '' },
      { name: 'NCCL_ALGO', kind: 'env', reference: 'Ring', current: 'Tree' },
      { name: 'NCCL_PROTO', kind: 'env', reference: 'LL' },
    ]);
    assert.deepEqual(
      fixed.map((entry) => entry.change.key),
      ['env.HF_TOKEN', 'packages.sglang'],
    );

    const server: ServerConfig = {
      profile: 'sglang',
      command: ['sglang', '--tp', '8', '--enable-x'],
      env: { OTHER: '1' },
      unsetEnv: [],
      readyTimeoutMs: 1000,
      verifyServing: true,
    };
    const restored = withDifferences(server, settable, new Set(['NCCL_PROTO', '--chunked-prefill-size', '--enable-x']));
    assert.deepEqual(restored.env, { OTHER: '1', NCCL_ALGO: 'Tree', NCCL_PROTO: 'LL' });
    assert.deepEqual(restored.command, ['sglang', '--tp', '8', '--chunked-prefill-size', '4096']);
    const current0 = withDifferences(server, settable, new Set());
    assert.deepEqual(current0.unsetEnv, ['NCCL_PROTO'], 'the current configuration unsets what the reference set, whatever the shell has');
    assert.deepEqual(current0.command, ['sglang', '--tp', '8', '--enable-x']);
  });
});
