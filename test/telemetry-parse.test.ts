import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { parseDriverCudaVersion, parseNvccVersion, parseNvlinkStatus, parseTopology } from '../src/fingerprint/nvidia-smi-text.js';
import { NVIDIA_SMI_FIELDS, parseNcclLibraryVersion } from '../src/fingerprint/parse.js';
import { meanPowerW } from '../src/telemetry/energy.js';
import { parseGovernors, parseHostProbe, parseLoadavg } from '../src/telemetry/host.js';
import {
  clockEventReasons,
  gpuSampleOf,
  PREFLIGHT_FIELDS,
  parseComputeApps,
  parseCsvHeader,
  parseQueryCsv,
  SAMPLE_FIELDS,
} from '../src/telemetry/nvidia-smi.js';
import { evaluatePreflight, visibleGpus } from '../src/telemetry/preflight.js';
import { parseLocalTimestamp } from '../src/telemetry/stream.js';
import { formatTelemetryAcross, summarizeTelemetry } from '../src/telemetry/summary.js';
import type { GpuSample } from '../src/telemetry/types.js';

/** Real outputs captured on an H200 (driver 580.159.04); see test/fixtures/nvidia-smi/README.txt. */
const fixture = (name: string): string => readFileSync(new URL(`../../test/fixtures/nvidia-smi/${name}`, import.meta.url), 'utf8');

/** The field list the captures were made with (README.txt). */
const CAPTURE_FIELDS = (
  'timestamp,index,uuid,name,pci.bus_id,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,power.limit,' +
  'enforced.power.limit,temperature.gpu,utilization.gpu,utilization.memory,memory.used,memory.total,' +
  'clocks_event_reasons.active,clocks_event_reasons.gpu_idle,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown,' +
  'clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.hw_power_brake_slowdown,' +
  'clocks_event_reasons.applications_clocks_setting,persistence_mode,pstate,driver_version'
).split(',');

function samplesOf(name: string): GpuSample[] {
  return parseQueryCsv(fixture(name), CAPTURE_FIELDS).map((row, i) => gpuSampleOf(row, i * 200)!);
}

describe('nvidia-smi --query-gpu on captured H200 output', () => {
  test('every field servelab queries exists in this driver’s --help-query-gpu', () => {
    const help = fixture('help-query-gpu.txt');
    for (const field of new Set([...SAMPLE_FIELDS, ...PREFLIGHT_FIELDS, ...NVIDIA_SMI_FIELDS])) assert.ok(help.includes(`"${field}"`), field);
  });

  test('idle row: clocks, power, memory; only the idle reason', () => {
    const [sample] = samplesOf('query-gpu-idle-nounits.csv');
    assert.deepEqual(sample, {
      at: 0,
      index: 0,
      smClockMHz: 345,
      memClockMHz: 3201,
      maxSmClockMHz: 1980,
      powerW: 80.41,
      powerLimitW: 700,
      temperatureC: 37,
      utilizationPct: 0,
      memoryUsedMiB: 0,
      memoryTotalMiB: 143771,
      reasons: ['idle'],
    });
  });

  test('the --format=csv header names the same fields (units stripped, long aliases)', () => {
    const [header, row] = fixture('query-gpu-idle.csv').trim().split('\n') as [string, string];
    const fields = parseCsvHeader(header);
    assert.equal(fields.length, CAPTURE_FIELDS.length);
    assert.equal(fields[5], 'clocks.current.sm');
    const noUnits = row.replace(/ (MHz|W|%|MiB)(?=,)/g, '');
    assert.equal(gpuSampleOf(parseQueryCsv(noUnits, fields)[0]!, 0)?.smClockMHz, 345);
  });

  test('busy -lms series: SW power cap active, SM clock 1500–1530 of 1980 MHz, 31.7 GiB used by the foreign process', () => {
    const samples = samplesOf('lms-busy.csv');
    assert.equal(samples.length, 20);
    const capped = samples.filter((sample) => sample.reasons?.includes('SW power cap'));
    assert.ok(capped.length >= 5, `${capped.length} capped samples`);
    for (const sample of capped) {
      assert.ok(sample.smClockMHz! < 1980, String(sample.smClockMHz));
      assert.equal(sample.memoryUsedMiB, 31731);
    }
    const summary = summarizeTelemetry({ gpu: samples, processes: [], host: [], governors: [] });
    const gpu = summary.gpus[0]!;
    assert.equal(gpu.samples, 20);
    assert.equal(gpu.reasonShare['SW power cap'], capped.length / 20);
    assert.equal(gpu.reasonShare.idle, undefined, 'idle is not a slowdown');
    assert.equal(gpu.memoryUsedMaxMiB, 31731);
    assert.ok(gpu.smClockMedianMHz! < 1980);
  });

  test("a variant's machine state in one line: the idle and the busy capture as two trials, each finding once", () => {
    const trial = (name: string, unavailable?: string) => ({
      summary: summarizeTelemetry({ gpu: samplesOf(name), processes: [], host: [{ at: 0, load1: 0.5 }], governors: ['performance'], cpus: 96 }),
      serverMetrics: unavailable === undefined ? { series: [{ name: 'vllm:num_requests_running', points: [] }] } : { unavailable, series: [] },
    });
    const line = formatTelemetryAcross([trial('lms-idle.csv'), trial('lms-busy.csv', '/metrics unreachable'), trial('lms-idle.csv')]);
    assert.match(line, /^GPU: SM \d+–\d+ MHz, \d+–\d+ W, max \d+ °C, util \d+(–\d+)?%, 31\.0 GiB used; SW power cap in 1 of 3 trials; /);
    assert.match(line, /; host: load 0\.50 median, 0\.50 max on 96 CPUs; governor performance; /);
    assert.match(line, /; server metrics: \/metrics unreachable in 1 of 3 trials; 1 server metrics scraped$/);
  });

  test('clock-event reason bitmask (nvml.h)', () => {
    assert.deepEqual(clockEventReasons(0x1n), ['idle']);
    assert.deepEqual(clockEventReasons(0x4n), ['SW power cap']);
    assert.deepEqual(clockEventReasons(0x64n), ['SW power cap', 'SW thermal slowdown', 'HW thermal slowdown']);
  });

  test('warning lines and [N/A] cells', () => {
    const rows = parseQueryCsv('WARNING: infoROM is corrupted\n0, [N/A], 3201\n', ['index', 'clocks.sm', 'clocks.mem']);
    assert.deepEqual(rows, [{ index: '0', 'clocks.mem': '3201' }]);
  });
});

describe('other nvidia-smi outputs', () => {
  test('the -lms stream’s timestamp is local time with milliseconds', () => {
    assert.equal(parseLocalTimestamp('2026/12/03 06:42:21.776'), new Date(2026, 11, 3, 6, 42, 21, 776).getTime());
    assert.equal(parseLocalTimestamp('2026/12/03 06:42:21'), new Date(2026, 11, 3, 6, 42, 21, 0).getTime());
    assert.equal(parseLocalTimestamp('[N/A]'), undefined);
  });

  test('compute apps: empty in the container even while a foreign process held 30 GiB; a documented row parses', () => {
    assert.deepEqual(parseComputeApps(fixture('compute-apps-busy.csv')), []);
    assert.deepEqual(parseComputeApps(fixture('compute-apps-idle.csv')), []);
    assert.deepEqual(parseComputeApps('4242, python3, 30720, GPU-b8898371-26f0-95a0-abb2-69448be4d2dd\n'), [
      { pid: 4242, name: 'python3', usedMiB: 30720, gpuUuid: 'GPU-b8898371-26f0-95a0-abb2-69448be4d2dd' },
    ]);
  });

  test('topo -m: single GPU (ANSI header) has no links; affinity kept', () => {
    assert.deepEqual(parseTopology(fixture('topo-m.txt')), { links: {}, affinity: { 'GPU0 CPU Affinity': '0-15', 'GPU0 NUMA Affinity': '0' } });
  });

  test('topo -m: two GPUs over NVLink with a NIC (synthetic, documented format)', () => {
    const { links, affinity } = parseTopology(fixture('synthetic-topo-m-2gpu.txt'));
    assert.deepEqual(links, { 'GPU0-GPU1': 'NV18', 'GPU0-NIC0': 'PIX', 'GPU1-GPU0': 'NV18', 'GPU1-NIC0': 'SYS' });
    assert.equal(affinity['GPU1 CPU Affinity'], '48-95');
  });

  test('nvlink -s: empty on one GPU; links and an inactive one on two', () => {
    assert.deepEqual(parseNvlinkStatus(fixture('nvlink-s.txt')), {});
    assert.deepEqual(parseNvlinkStatus(fixture('synthetic-nvlink-s-2gpu.txt')), {
      '0': '18 links × 26.562 GB/s',
      '1': '17 links × 26.562 GB/s, 1 inactive',
    });
  });

  test('CUDA, nvcc and NCCL library versions', () => {
    assert.equal(parseDriverCudaVersion(fixture('nvidia-smi-q.txt')), '13.0');
    assert.equal(parseDriverCudaVersion(fixture('nvidia-smi.txt')), '13.0');
    assert.equal(parseNvccVersion(fixture('nvcc-version.txt')), '13.0.88');
    assert.equal(parseNcclLibraryVersion(fixture('nccl-libs.txt')), '2.28.3');
  });

  test('host: loadavg, governors (absent in the container), the combined probe', () => {
    assert.deepEqual(parseLoadavg(fixture('loadavg.txt')), { load1: 1.31, load5: 0.33, load15: 0.11 });
    assert.deepEqual(parseGovernors(''), []);
    assert.deepEqual(parseGovernors('performance\nperformance\npowersave\n'), ['performance', 'powersave']);
    assert.deepEqual(parseHostProbe('1.31 0.33 0.11 1/208 503\n--\n2\n--\n'), { load1: 1.31, cpus: 2, governors: [] });
    assert.deepEqual(parseHostProbe('1.31 0.33 0.11 1/208 503\n--\n--\nperformance\n'), { load1: 1.31, governors: ['performance'] });
  });
});

describe('preflight findings', () => {
  const busyRow = (): Record<string, string> => {
    const row = parseQueryCsv(fixture('lms-busy.csv'), CAPTURE_FIELDS).at(-1)!;
    return { ...row, 'power.default_limit': '700.00', 'clocks.applications.graphics': '1980' };
  };

  test('the captured busy GPU: foreign memory and SW power cap; idle GPU is clean', () => {
    const findings = evaluatePreflight({ gpuRows: [busyRow()], processes: [], governors: [], load1: 1.31, cpus: 16 });
    assert.deepEqual(
      findings.map((finding) => finding.key),
      ['gpu0.foreignMemory', 'gpu0.clockEvents'],
    );
    assert.match(findings[0]!.message, /GPU 0: 31\.0 GiB of memory in use before the server starts/);
    assert.match(findings[1]!.message, /SW power cap/);
    const idle = parseQueryCsv(fixture('query-gpu-idle-nounits.csv'), CAPTURE_FIELDS);
    assert.deepEqual(evaluatePreflight({ gpuRows: idle, processes: [], governors: [], load1: 1.31, cpus: 16 }), []);
  });

  test('settings: persistence off, lowered power limit and application clocks, busy host, powersave governor', () => {
    const row = {
      ...busyRow(),
      'memory.used': '0',
      'clocks_event_reasons.active': '0x0000000000000001',
      persistence_mode: 'Disabled',
      'enforced.power.limit': '500.00',
      'clocks.applications.graphics': '1410',
    };
    const findings = evaluatePreflight({ gpuRows: [row], processes: [], governors: ['powersave'], load1: 12, cpus: 16 });
    assert.deepEqual(
      findings.map((finding) => finding.key),
      ['gpu0.applicationClocks', 'gpu0.powerLimit', 'gpu0.persistenceMode', 'host.load', 'host.governor'],
    );
  });

  test('only the GPUs of CUDA_VISIBLE_DEVICES are checked', () => {
    assert.deepEqual(visibleGpus({ CUDA_VISIBLE_DEVICES: '1,2' }), [1, 2]);
    assert.equal(visibleGpus({ CUDA_VISIBLE_DEVICES: 'GPU-abc' }), undefined);
    assert.deepEqual(evaluatePreflight({ gpuRows: [busyRow()], processes: [], governors: [], gpus: [1] }), []);
  });
});

describe('GPU energy from the captured power readings', () => {
  test('mean power over a window: the idle and the power-capped stretch of the busy capture, summed over GPUs', () => {
    const samples = samplesOf('lms-busy.csv'); // one reading per 200 ms: ~80 W for 2 s, a ramp, then ~690 W
    const idle = meanPowerW(samples, 0, 1800)!;
    assert.deepEqual([idle.gpus, Math.round(idle.watts * 10) / 10], [1, 80.1]);
    const capped = meanPowerW(samples, 3400, 3800)!;
    assert.ok(Math.abs(capped.watts - 689.7) < 0.2, `capped ${capped.watts} W`);
    // Trapezoids over the ramp: between the two plateaus, by the area under the readings.
    const whole = meanPowerW(samples, 0, 3800)!.watts;
    let area = 0;
    for (let i = 1; i < samples.length; i++) area += ((samples[i]!.powerW! + samples[i - 1]!.powerW!) / 2) * 200;
    assert.ok(Math.abs(whole - area / 3800) < 1e-9 && whole > 250 && whole < 400, `whole capture ${whole} W`);
    const twoGpus = meanPowerW([...samples, ...samples.map((sample) => ({ ...sample, index: 1 }))], 3400, 3800)!;
    assert.deepEqual([twoGpus.gpus, Math.round(twoGpus.watts)], [2, Math.round(2 * capped.watts)]);
    assert.equal(Math.round(meanPowerW(samples, 10_000, 20_000)!.watts), Math.round(whole), 'no reading in the window: all of them');
    assert.equal(meanPowerW([{ at: 0, index: 0 }], 0, 1), undefined);
  });
});
