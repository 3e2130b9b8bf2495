import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { laneExperiment } from '../src/experiment/run/lanes.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { tempDir } from './support-experiment.js';

const BASE = `
name: lanes
profile: vllm
server:
  command: vllm serve m --port {port}
  env: { NCCL_PROTO: LL }
  unsetEnv: [CUDA_VISIBLE_DEVICES]
workloads:
  - { kind: single-stream, requests: 8 }
`;

describe('lanes: in the experiment file', () => {
  test('names default to lane N; a lane env and port range go over every variant server, its executor replaces the run one', (t) => {
    const path = join(tempDir(t, 'lanes-file'), 'exp.yaml');
    writeFileSync(
      path,
      `${BASE}lanes:\n  - { env: { CUDA_VISIBLE_DEVICES: "0,1" }, portRange: "18000-18099" }\n  - { name: node-8, executor: { kind: ssh, host: node-8 } }\n  -\n`,
    );
    const experiment = loadExperiment(path);
    assert.deepEqual(
      experiment.lanes?.map((lane) => lane.name),
      ['lane1', 'node-8', 'lane3'],
    );
    assert.deepEqual(experiment.lanes?.[1]?.executor, { kind: 'ssh', host: 'node-8', client: 'local' });
    const first = laneExperiment(experiment, experiment.lanes![0]!).variants[0]!;
    assert.deepEqual(first.server.env, { NCCL_PROTO: 'LL', CUDA_VISIBLE_DEVICES: '0,1' });
    // The lane sets what the server config unsets: the lane wins.
    assert.deepEqual(first.server.unsetEnv, []);
    assert.deepEqual(first.server.portRange, { low: 18000, high: 18099 });
    // The server key stays the config's: a config is the same config on every lane.
    assert.equal(first.serverKey, experiment.variants[0]!.serverKey);
    assert.equal(loadExperiment(writeBase(t, BASE)).lanes, undefined);
  });

  test('Slurm lanes: count N is N jobs named NAME-1 … NAME-N, each with its slurm: settings; without a name, lane N', (t) => {
    const path = join(tempDir(t, 'lanes-slurm'), 'exp.yaml');
    writeFileSync(
      path,
      `${BASE}executor: { kind: slurm, partition: gpu, timeLimit: "2:00:00" }\nlanes:\n  - { name: a100, count: 2, slurm: { partition: a100, gpusPerJob: 4 } }\n  - { count: 1 }\n`,
    );
    const experiment = loadExperiment(path);
    assert.deepEqual(
      experiment.lanes?.map((lane) => [lane.name, lane.slurm]),
      [
        ['a100-1', { partition: 'a100', gpusPerJob: 4 }],
        ['a100-2', { partition: 'a100', gpusPerJob: 4 }],
        ['lane3', undefined],
      ],
    );
  });

  test('refused at load, with the key and the next step: two lanes on one fixed port, a lane kind unlike the executor, a name twice', (t) => {
    const dir = tempDir(t, 'lanes-refused');
    const cases: Array<[string, RegExp]> = [
      [
        `${BASE.replace('--port {port}', '--port 8000').replace('unsetEnv', 'port: 8000\n  unsetEnv')}lanes: [{}, {}]\n`,
        /server\.port: a fixed port cannot serve several lanes at once/,
      ],
      [
        `${BASE}executor: { kind: slurm }\nlanes: [{ executor: { kind: ssh, host: h } }]\n`,
        /lanes\[0\]\.executor: with executor kind slurm every lane is a Slurm job/,
      ],
      [`${BASE}lanes: [{ count: 2 }]\n`, /lanes\[0\]: slurm: and count: are for Slurm lanes \(executor kind slurm\)/],
      [`${BASE}lanes: [{ slurm: { partition: a } }]\n`, /lanes\[0\]: slurm: and count: are for Slurm lanes/],
      [`${BASE}lanes: [{ name: a }, { name: a }]\n`, /lanes: two lanes are named "a"/],
      [`${BASE}lanes: [{ executor: { kind: slurm } }]\n`, /lanes\[0\]\.executor/],
    ];
    for (const [index, [text, pattern]] of cases.entries()) {
      const path = join(dir, `exp-${index}.yaml`);
      writeFileSync(path, text);
      assert.throws(() => loadExperiment(path), pattern);
    }
  });
});

function writeBase(t: Parameters<typeof tempDir>[0], text: string): string {
  const path = join(tempDir(t, 'lanes-base'), 'exp.yaml');
  writeFileSync(path, text);
  return path;
}
