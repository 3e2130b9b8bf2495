import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupAlive, signalGroup } from '../src/launch/process-group.js';

test('pid 0 ("no process" as a fake or remote server records it) and 1 never name a group to signal', () => {
  // kill(-0) would be this process's own group, kill(-1) every process we may signal: a stored pid of 0 once
  // SIGKILLed a whole test run through a stop of "its" server.
  for (const pid of [0, 1, -1, Number.NaN]) {
    assert.equal(groupAlive(pid), false, String(pid));
    assert.equal(signalGroup(pid, 'SIGTERM'), false, String(pid));
  }
});
