import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { executorConfigSchema } from '../src/exec/config.js';
import {
  classifyState,
  jobName,
  normalizeState,
  parseSacct,
  parseSbatchParsable,
  parseScontrolJob,
  parseSqueue,
  slurmJobScript,
} from '../src/exec/slurm-text.js';

describe('executor config schema', () => {
  test('absent section means local', () => {
    assert.deepEqual(executorConfigSchema.parse(undefined), { kind: 'local' });
  });

  test('ssh: client defaults to local; options are checked', () => {
    assert.deepEqual(executorConfigSchema.parse({ kind: 'ssh', host: 'gpu-box' }), { kind: 'ssh', host: 'gpu-box', client: 'local' });
    assert.equal(executorConfigSchema.safeParse({ kind: 'ssh', host: 'gpu-box', port: 70000 }).success, false);
    assert.equal(executorConfigSchema.safeParse({ kind: 'ssh', host: 'gpu-box', sshOptions: ['-v'] }).success, false);
    assert.equal(executorConfigSchema.safeParse({ kind: 'ssh', host: 'gpu-box', hots: 'typo' }).success, false);
    assert.equal(executorConfigSchema.safeParse({ kind: 'ssh' }).success, false);
  });

  test('slurm: retries default to 0; time limits must be Slurm time formats', () => {
    assert.deepEqual(executorConfigSchema.parse({ kind: 'slurm' }), { kind: 'slurm', retries: 0 });
    for (const timeLimit of ['90', '1:30:00', '2-00:00:00', '1-12', 'UNLIMITED']) {
      assert.equal(executorConfigSchema.safeParse({ kind: 'slurm', timeLimit }).success, true, timeLimit);
    }
    assert.equal(executorConfigSchema.safeParse({ kind: 'slurm', timeLimit: '1h' }).success, false);
    assert.equal(executorConfigSchema.safeParse({ kind: 'slurm', retries: -1 }).success, false);
    assert.equal(executorConfigSchema.safeParse({ kind: 'kubernetes' }).success, false);
  });

  test('slurm: scalar fields that become script lines refuse line breaks and spaces', () => {
    for (const bad of [
      { partition: 'gpu\nrm -rf ~' },
      { partition: 'gpu --exclusive' },
      { sbatchArgs: ['--account=a\n#SBATCH --x'] },
      { remoteServelab: 'servelab\nid' },
    ]) {
      const result = executorConfigSchema.safeParse({ kind: 'slurm', ...bad });
      assert.equal(result.success, false, JSON.stringify(bad));
      assert.match(result.error!.issues[0]!.message, /one (word|line)/);
    }
    assert.equal(executorConfigSchema.safeParse({ kind: 'ssh', host: 'h', remoteDir: '/x\ny' }).success, false);
  });
});

describe('job script', () => {
  const input = {
    config: { partition: 'gpu', gpusPerJob: 2, timeLimit: '2:00:00', sbatchArgs: ['--account=lab', '--exclusive'] },
    experimentName: 'spec decode/eagle',
    runId: 7,
    lane: { index: 1, name: 'a100-2' },
    servelab: "'/usr/bin/node' '/opt/servelab/bin/servelab.js'",
    experimentPath: "/shared/exp's.yaml",
    storePath: '/shared/servelab.db',
    workDir: '/shared',
  };

  test('carries the resources and runs exactly one lane of the run', () => {
    const script = slurmJobScript(input);
    const directives = script
      .split('\n')
      .filter((line) => line.startsWith('#SBATCH '))
      .map((line) => line.slice(8));
    assert.deepEqual(directives, [
      '--job-name=servelab-spec-decode-eagle-a100-2',
      '--nodes=1',
      '--ntasks=1',
      '--partition=gpu',
      '--gres=gpu:2',
      '--time=2:00:00',
      '--account=lab',
      '--exclusive',
    ]);
    assert.ok(script.startsWith('#!/bin/bash\n'));
    assert.match(
      script,
      /^exec '\/usr\/bin\/node' '\/opt\/servelab\/bin\/servelab.js' run '\/shared\/exp'\\''s.yaml' --run-id 7 --lane 1 --store \/shared\/servelab.db$/m,
    );
  });

  test('is valid bash', () => {
    const result = spawnSync('bash', ['-n'], { input: slurmJobScript(input) });
    assert.equal(result.status, 0, result.stderr.toString());
  });

  test('omits what the config leaves out', () => {
    const script = slurmJobScript({ ...input, config: {} });
    assert.doesNotMatch(script, /--partition|--gres|--time|--accept-drift/);
  });

  test('passes --accept-drift on to the job when the dispatcher was given it', () => {
    assert.match(slurmJobScript({ ...input, acceptDrift: true }), /^exec .* --store \/shared\/servelab.db --accept-drift$/m);
  });

  test('passes --accept-env-change on to the job: the reference guard runs on the node', () => {
    assert.match(slurmJobScript({ ...input, acceptDrift: true, acceptEnvChange: true }), /^exec .* --accept-drift --accept-env-change$/m);
    assert.doesNotMatch(slurmJobScript(input), /--accept-env-change/);
  });

  test('refuses an sbatch argument with a line break (it would end the directive block)', () => {
    assert.throws(() => slurmJobScript({ ...input, config: { sbatchArgs: ['--a=1\nrm -rf /'] } }));
    assert.throws(() => slurmJobScript({ ...input, config: { partition: 'gpu\necho pwned' } }), /partition must be one word/);
    assert.throws(() => slurmJobScript({ ...input, lane: { index: 0, name: 'k\necho pwned' } }), /invalid lane name/);
  });

  test('job names stay short and shell-safe', () => {
    assert.equal(jobName('x'.repeat(100), 'gpus 0-3/node-7-long-name'), `servelab-${'x'.repeat(40)}-gpus-0-3-node-7-`);
  });
});

describe('Slurm output parsers', () => {
  test('sbatch --parsable', () => {
    assert.equal(parseSbatchParsable('12345\n'), '12345');
    assert.equal(parseSbatchParsable('12345;cluster-a\n'), '12345');
    assert.equal(parseSbatchParsable('sbatch: error: invalid partition\n'), undefined);
  });

  test('squeue lines (as printed by squeue -h --states=all -o %i|%T|%r|%N)', () => {
    const jobs = parseSqueue('2|FAILED|NonZeroExitCode|localhost\n3|PENDING|Resources|\n1|RUNNING|None|node-07\n');
    assert.deepEqual(jobs.get('2'), { state: 'FAILED', reason: 'NonZeroExitCode', node: 'localhost' });
    assert.deepEqual(jobs.get('3'), { state: 'PENDING', reason: 'Resources' });
    assert.deepEqual(jobs.get('1'), { state: 'RUNNING', node: 'node-07' });
    assert.equal(parseSqueue('slurm_load_jobs error: Invalid job id specified\n').size, 0);
  });

  test('sacct lines, including "CANCELLED by UID" and requeued records', () => {
    const jobs = parseSacct('41|CANCELLED by 1000|0:15|gpu-3\n42|TIMEOUT|0:0|gpu-4\n43|FAILED|1:0|None assigned\n43|COMPLETED|0:0|gpu-5\n');
    assert.deepEqual(jobs.get('41'), { state: 'CANCELLED', exitCode: '0:15', node: 'gpu-3' });
    assert.equal(jobs.get('42')?.state, 'TIMEOUT');
    assert.deepEqual(jobs.get('43'), { state: 'COMPLETED', exitCode: '0:0', node: 'gpu-5' });
  });

  test('scontrol show job -o', () => {
    const line =
      'JobId=2 JobName=wrap UserId=root(0) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) ExitCode=3:0 RunTime=00:00:00 NodeList=localhost BatchHost=localhost';
    assert.deepEqual(parseScontrolJob(line), { state: 'FAILED', reason: 'NonZeroExitCode', exitCode: '3:0', node: 'localhost' });
    assert.equal(parseScontrolJob('slurm_load_jobs error: Invalid job id specified'), undefined);
  });

  test('state classes', () => {
    assert.equal(normalizeState('cancelled+'), 'CANCELLED');
    for (const state of ['PENDING', 'RUNNING', 'COMPLETING', 'REQUEUED']) assert.equal(classifyState(state), 'active');
    assert.equal(classifyState('COMPLETED'), 'completed');
    for (const state of ['FAILED', 'CANCELLED', 'TIMEOUT', 'NODE_FAIL', 'OUT_OF_MEMORY', 'PREEMPTED', 'BOOT_FAIL', 'LOST']) {
      assert.equal(classifyState(state), 'failed', state);
    }
  });
});
