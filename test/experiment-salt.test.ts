/**
 * Cold trials' prompt salts (experiment/run/cache.ts): equal for the variants of one block on their own servers (the
 * same prompts), different across blocks and for variants sharing a server, and new for a trial measured again — its
 * failed attempt left its prompts cached (a real llama-server found 97% of them there).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { trialCache } from '../src/experiment/run/cache.js';
import { BUILTIN_PROFILES } from '../src/profiles/builtin.js';

const salt = (block: number, sharedIndex: number, attempt: number) =>
  trialCache('cold', BUILTIN_PROFILES.llamacpp!, { runId: 3, block, sharedIndex, attempt }).promptSalt;

test('a cold trial measured again gets a salt of its own; first attempts keep the salt of their block', () => {
  assert.equal(salt(0, 0, 0), salt(0, 0, 0), 'a resumed run repeats its salts');
  assert.notEqual(salt(0, 0, 0), salt(1, 0, 0), 'blocks');
  assert.notEqual(salt(0, 0, 0), salt(0, 1, 0), 'variants sharing a server');
  const attempts = [0, 1, 2].map((attempt) => salt(0, 0, attempt));
  assert.equal(new Set(attempts).size, 3, `attempts: ${attempts.join(', ')}`);
  assert.equal(trialCache('cold', BUILTIN_PROFILES.llamacpp!, { runId: 3, block: 0, sharedIndex: 0, attempt: 1 }).record, `cold (salt ${attempts[1]})`);
});
