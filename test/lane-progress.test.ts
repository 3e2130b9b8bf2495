import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { laneProgress } from '../src/cli/lane-progress.js';
import { LaneBoard, type LanesView } from '../src/experiment/run/lane-status.js';

/** A stderr stand-in that keeps what was written; `isTTY` as a terminal or a log file. */
function sink(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  let text = '';
  const stream = {
    isTTY,
    columns: 80,
    write: (chunk: string) => {
      text += chunk;
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  return { stream, text: () => text };
}

/** A board of two lanes whose every change goes to `onChange`, moved through a stretch: start, a trial, stored. */
function drive(onChange: (view: LanesView) => void): LaneBoard {
  const board = new LaneBoard(['lane1', 'lane2'], { before: 2, planned: () => 8 }, onChange);
  board.set(0, { kind: 'starting', config: 'baseline', block: 3 });
  board.progress(1, 'trial 4/8 twin c=8', { completed: 3, total: 6, outputTokensPerSecond: 0, levelLabel: 'c=8' } as never, false);
  board.stored(1);
  return board;
}

describe('lane progress', () => {
  test("a lane board says each lane's state and the trials stored, the earlier process's included", () => {
    const views: LanesView[] = [];
    drive((view) => views.push(view));
    const last = views.at(-1)!;
    assert.equal(last.measured, 3);
    assert.deepEqual(
      last.lanes.map((lane) => [lane.name, lane.activity.kind, lane.measured]),
      [
        ['lane1', 'starting', 0],
        ['lane2', 'measuring', 1],
      ],
    );
  });

  test('a terminal keeps a short block under the log lines, redrawn in place', () => {
    const { stream, text } = sink(true);
    const progress = laneProgress(stream);
    drive(progress.update);
    progress.log('[lane1] server ready in 2.0s');
    const after = text().slice(text().lastIndexOf('\x1b[J') + 3);
    assert.equal(
      after,
      [
        '[lane1] server ready in 2.0s',
        'lanes: 3/8 trials stored',
        '  lane1: starting baseline (block 3) (0 stored)',
        '  lane2: trial 4/8 twin c=8, 3/6 requests (1 stored)',
        '',
      ].join('\n'),
    );
    // The block (3 lines) is taken back before the next log line, so none is left between log lines.
    assert.ok(text().includes('\x1b[3F\x1b[J[lane1] server ready'));
    progress.finish();
    assert.ok(text().endsWith('\x1b[3F\x1b[J'));
  });

  test('a log file gets no control characters: log lines, and the lanes in one line every 30 s at most', (t) => {
    t.mock.timers.enable({ apis: ['Date'], now: 0 });
    const { stream, text } = sink(false);
    const progress = laneProgress(stream);
    const board = drive(progress.update);
    progress.log('[lane2] trial 4/8 twin c=8: 145 ms');
    assert.equal(text(), '[lane2] trial 4/8 twin c=8: 145 ms\n', 'nothing before 30 s');
    t.mock.timers.tick(30_000);
    board.set(0, { kind: 'waiting' });
    board.set(0, { kind: 'done' });
    assert.equal(text(), '[lane2] trial 4/8 twin c=8: 145 ms\nlanes: 3/8 trials stored · lane1 waiting for a block · lane2 trial 4/8 twin c=8, 3/6 requests\n');
    assert.ok(!text().includes('\r') && !text().includes('\u001b'), text());
  });
});
