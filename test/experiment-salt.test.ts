/**
 * Cold trials' prompt salts (experiment/run/cache.ts): equal for the variants of one block on their own servers (the
 * same prompts), different for every other trial — across blocks, workloads of one start, repetitions of a blocked
 * pass and variants sharing a server — and new for a trial measured again: its failed attempt left its prompts
 * cached (a real llama-server found 97% of them there).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type TrialPlace, trialCache } from '../src/experiment/run/cache.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';

const FIRST: TrialPlace = { runId: 3, block: 0, workload: 0, repetition: 0, sharedIndex: 0, attempt: 0 };
const salt = (place: Partial<TrialPlace>) => trialCache('cold', BUILTIN_PROFILES.llamacpp!, { ...FIRST, ...place }).promptSalt;

test('a cold trial measured again gets a salt of its own; first attempts keep the salt of their trial', () => {
  assert.equal(salt({}), salt({}), 'a resumed run repeats its salts (and variants on their own servers share them)');
  const attempts = [0, 1, 2].map((attempt) => salt({ attempt }));
  assert.equal(new Set(attempts).size, 3, `attempts: ${attempts.join(', ')}`);
  assert.equal(trialCache('cold', BUILTIN_PROFILES.llamacpp!, { ...FIRST, attempt: 1 }).record, `cold (salt ${attempts[1]})`);
});

test('no two trials of a run share a salt: blocks, workloads, repetitions, variants sharing a server, attempts', () => {
  const salts = new Set<number | undefined>();
  let count = 0;
  for (const block of [0, 1])
    for (const workload of [0, 1, 2])
      for (const repetition of [0, 1, 2])
        for (const sharedIndex of [0, 1])
          for (const attempt of [0, 1, 2]) {
            salts.add(salt({ block, workload, repetition, sharedIndex, attempt }));
            count += 1;
          }
  assert.equal(salts.size, count);
  assert.notEqual(salt({ runId: 4 }), salt({}), 'runs');
});
