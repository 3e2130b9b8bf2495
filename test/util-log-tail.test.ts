import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cutLogLine, LineCutter, MAX_LOG_LINE_CHARS, readLastLines, readLogLines, readLogTail } from '../src/util/log-tail.js';
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

describe('long log lines', () => {
  test('lines are cut while they arrive, CRLF split across chunks ends one line, the unterminated last one counts', () => {
    const cutter = new LineCutter();
    const long = 'y'.repeat(MAX_LOG_LINE_CHARS + 10);
    assert.deepEqual(cutter.push(Buffer.from(`one\r`)), ['one']);
    assert.deepEqual(cutter.push(Buffer.from(`\ntwo\n${long.slice(0, 100)}`)), ['two']);
    assert.deepEqual(cutter.push(Buffer.from(`${long.slice(100)}\nlast`)), [`${'y'.repeat(MAX_LOG_LINE_CHARS)}… (10 more characters cut)`]);
    assert.equal(cutter.end(), 'last');
    assert.equal(cutter.end(), undefined);
  });

  test('a tail of a log with one huge line shows it cut', (t) => {
    const dir = tempDir(t, 'log-tail');
    const path = join(dir, 'server.log');
    writeFileSync(path, `start\n${'z'.repeat(100_000)}\n`);
    const [last] = readLastLines(path, 1);
    assert.equal(last, cutLogLine('z'.repeat(100_000)));
    assert.ok(last!.length < MAX_LOG_LINE_CHARS + 100);
    assert.deepEqual(readLogLines(path), ['start', last]);
  });
});
