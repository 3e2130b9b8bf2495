import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { formatDriftAlarm } from '../src/experiment/analysis/drift.js';
import { attributeMachineState } from '../src/telemetry/attribution.js';
import { gpuSampleOf, parseQueryCsv } from '../src/telemetry/nvidia-smi.js';
import { formatTelemetrySummary, summarizeTelemetry } from '../src/telemetry/summary.js';
import type { GpuProcess, TelemetrySummary } from '../src/telemetry/types.js';

const fixture = (name: string): string => readFileSync(new URL(`../../test/fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');
const FIELDS = (
  'timestamp,index,uuid,name,pci.bus_id,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,power.limit,enforced.power.limit,' +
  'temperature.gpu,utilization.gpu,utilization.memory,memory.used,memory.total,clocks_event_reasons.active,a,b,c,d,e,f,g,persistence_mode,pstate,driver_version'
).split(',');

/** A trial's summary from a captured -lms series, with the given host load and processes. */
function summaryOf(name: string, options: { load?: number; processes?: GpuProcess[]; shiftMemoryMiB?: number } = {}): TelemetrySummary {
  const gpu = parseQueryCsv(fixture(name), FIELDS).map((row, i) => {
    const sample = gpuSampleOf(row, i * 200)!;
    if (options.shiftMemoryMiB !== undefined) sample.memoryUsedMiB = (sample.memoryUsedMiB ?? 0) + options.shiftMemoryMiB;
    return sample;
  });
  return summarizeTelemetry({ gpu, processes: options.processes ?? [], host: [{ at: 0, load1: options.load ?? 0.5 }], governors: ['performance'], cpus: 16 });
}

describe('drift attribution on captured H200 telemetry', () => {
  // The reference: the GPU busy with only our work (the busy capture with the foreign 31 GiB taken away, 40 GiB ours).
  const busyAlone = summaryOf('lms-busy.csv', { shiftMemoryMiB: 40960 - 31731 });
  // Now: the same plus a foreign process holding 30 GiB, and the SW power cap throttling more of the time.
  const foreign: GpuProcess = { pid: 4242, name: 'python3', usedMiB: 30720, gpuUuid: 'GPU-b8898371' };

  test('idle reference vs the busy capture: throttling share, SM clock, memory', () => {
    const idle = summaryOf('lms-idle.csv');
    const busy = summaryOf('lms-busy.csv');
    const lines = attributeMachineState([idle, idle], busy);
    const share = Math.round(busy.gpus[0]!.reasonShare['SW power cap']! * 100);
    assert.equal(lines[0], `GPU 0 throttled (SW power cap) for ${share}% of the trial vs 0%`);
    assert.match(lines[1]!, /^GPU 0 SM clock median \d+ vs 345 MHz$/);
    assert.equal(lines[2], 'GPU 0 memory in use 31.0 GiB vs 0.0 GiB (+31.0 GiB: another process?)');
  });

  test('a foreign process and more memory than the reference trials, named in the drift alarm', () => {
    const now = summaryOf('lms-busy.csv', { processes: [foreign], shiftMemoryMiB: 40960 - 31731 + 30720 });
    const lines = attributeMachineState([busyAlone], now);
    assert.deepEqual(lines, ['GPU 0 memory in use 70.0 GiB vs 40.0 GiB (+30.0 GiB: another process?)', '1 foreign process using 30.0 GiB (python3 pid 4242)']);
    const alarm = formatDriftAlarm({
      variant: 'baseline',
      metricLabel: 'tok/s',
      current: 62.9,
      reference: 88.8,
      changePct: -29.2,
      changes: [],
      machine: lines,
    });
    assert.equal(
      alarm,
      'baseline 62.9 tok/s vs 88.8 recorded (−29%); environment identical; machine state differs: GPU 0 memory in use 70.0 GiB vs 40.0 GiB (+30.0 GiB: another process?); 1 foreign process using 30.0 GiB (python3 pid 4242)',
    );
  });

  test('a busy host and another governor; nothing when the machine is the same', () => {
    const now = { ...busyAlone, load1Median: 9.5, governors: ['powersave'] };
    assert.deepEqual(attributeMachineState([busyAlone], now), ['host load 9.5 vs 0.5 (16 CPUs)', 'CPU governor powersave vs performance']);
    assert.deepEqual(attributeMachineState([busyAlone, busyAlone], busyAlone), []);
    assert.deepEqual(attributeMachineState([], busyAlone), []);
  });

  test('GPU telemetry lost since the reference trials', () => {
    const none = summarizeTelemetry({ gpuUnavailable: 'nvidia-smi not found', gpu: [], processes: [], host: [], governors: [] });
    assert.deepEqual(attributeMachineState([busyAlone], none), ['no GPU telemetry now (nvidia-smi not found), the reference trials had some']);
  });

  test('summary lines for `show`', () => {
    const lines = formatTelemetrySummary(summaryOf('lms-busy.csv', { processes: [foreign] }));
    assert.match(lines[0]!, /^GPU 0: SM \d+\/1980 MHz, \d+\/700 W, max 58 °C, util \d+%, 31\.0 GiB used, SW power cap \d+% \(20 samples\)$/);
    assert.equal(lines[1], 'GPU processes: python3 (pid 4242, 30.0 GiB)');
    assert.equal(lines[2], 'host: load 0.50 median, 0.50 max on 16 CPUs, governor performance');
  });
});
