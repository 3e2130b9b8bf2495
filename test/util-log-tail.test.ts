import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { readLastLines, readLogTail } from '../src/util/log-tail.js';
import { tempDir } from './support-experiment.js';

describe('log tails', () => {
  test('last lines of a log: trailing newline ignored, CRLF split, a missing log has none', (t) => {
    const dir = tempDir(t, 'log-tail');
    const path = join(dir, 'server.log');
    writeFileSync(path, 'one\r\ntwo\nthree\n');
    assert.deepEqual(readLastLines(path, 2), ['two', 'three']);
    assert.deepEqual(readLastLines(path, 10), ['one', 'two', 'three']);
    assert.deepEqual(readLastLines(join(dir, 'absent.log'), 5), []);
  });

  test('a window cut from a large log drops the partial first line', async (t) => {
    const dir = tempDir(t, 'log-tail');
    const path = join(dir, 'server.log');
    writeFileSync(path, `${'x'.repeat(100)}\nkept 1\nkept 2\n`);
    assert.deepEqual(readLastLines(path, 10, 20), ['kept 1', 'kept 2']);
    assert.deepEqual(await readLogTail(path, 20), { text: 'kept 1\nkept 2\n', size: 115, truncated: true });
    assert.deepEqual(await readLogTail(join(dir, 'absent.log')), { text: '', size: 0, truncated: false });
  });
});
