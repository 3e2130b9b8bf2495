import assert from 'node:assert/strict';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { describe, type TestContext, test } from 'node:test';
import Database from 'better-sqlite3';
import { LocalExecutor } from '../src/exec/local.js';
import { SshExecutor } from '../src/exec/ssh.js';
import type { CommandResult, CommandRunner } from '../src/fingerprint/types.js';
import { spawnSimulator } from '../src/simulate/child.js';
import { runPreflight } from '../src/telemetry/preflight.js';
import { startSampler } from '../src/telemetry/sampler.js';
import { startScraper } from '../src/telemetry/scrape.js';
import { cli, tempDir, writeExperiment } from './support-experiment.js';
import { ciSshd, needs } from './support-services.js';
import { waitFor } from './support-wait.js';

/** This test machine has no nvidia-smi; on a GPU host the GPU parts are checked by the parser tests' captures. */
const hasNvidiaSmi = async (): Promise<boolean> => (await new LocalExecutor().run(['nvidia-smi', '-L'], 5000)).code === 0;

/**
 * An executor's command runner, counting the host readings it answered: a test stops the sampler once it has the
 * readings it checks, however long a loaded machine takes for each (a fixed sleep would assume how many fit in it).
 */
function counting(inner: CommandRunner): CommandRunner & { hostReadings: number } {
  const runner = {
    hostLabel: inner.hostLabel,
    hostReadings: 0,
    async run(argv: string[], timeoutMs?: number): Promise<CommandResult> {
      const result = await inner.run(argv, timeoutMs);
      if (argv[0] === 'sh') runner.hostReadings += 1;
      return result;
    },
  };
  return runner;
}

/** An HTTP proxy to `target` on 127.0.0.1 that counts the responses it relayed; closed after the test. */
async function countingProxy(t: TestContext, target: string): Promise<{ url: string; relayed: () => number }> {
  let relayed = 0;
  const proxy = createServer(async (request, response) => {
    const upstream = await fetch(new URL(request.url ?? '/', target));
    response.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'text/plain' }).end(await upstream.text());
    relayed += 1;
  });
  proxy.listen(0, '127.0.0.1');
  await once(proxy, 'listening');
  t.after(() => proxy.close());
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, relayed: () => relayed };
}

describe('sampler on a host without nvidia-smi', () => {
  test('GPU part absent with the reason; host load and CPU count still sampled', async (t) => {
    if (await hasNvidiaSmi()) return t.skip('nvidia-smi present: graceful absence cannot be shown here');
    const runner = counting(new LocalExecutor());
    const sampler = startSampler(runner, { intervalMs: 50 });
    assert.ok(await waitFor(() => runner.hostReadings >= 2, 30_000), 'two host readings');
    const series = await sampler.stop();
    assert.equal(series.gpuUnavailable, 'nvidia-smi not found');
    assert.deepEqual(series.gpu, []);
    assert.ok(series.host.length >= 2, `${series.host.length} host samples`);
    assert.ok(series.host.every((sample) => Number.isFinite(sample.load1)));
    assert.ok((series.cpus ?? 0) >= 1);
  });

  test('the local -lms stream reports the missing nvidia-smi the same way', async (t) => {
    if (await hasNvidiaSmi()) return t.skip('nvidia-smi present');
    const runner = counting(new LocalExecutor());
    const sampler = startSampler(runner, { intervalMs: 50, local: true });
    assert.ok(await waitFor(() => runner.hostReadings >= 1, 30_000), 'a host reading');
    const series = await sampler.stop();
    assert.equal(series.gpuUnavailable, 'nvidia-smi not found');
    assert.ok(series.host.length >= 1);
  });

  test('a missing program costs no child process: the local runner and the -lms stream answer from a PATH lookup', async (t) => {
    if (await hasNvidiaSmi()) return t.skip('nvidia-smi present');
    // Spawning a missing program still forks this process and opens its pipes (7-9 ms of a loaded 2-core box, several
    // times a trial on a CPU-only host); handles are counted in the same tick as the call.
    const processes = () => process.getActiveResourcesInfo().filter((kind) => kind === 'ProcessWrap').length;
    const before = processes();
    const answer = new LocalExecutor().run(['nvidia-smi', '-L'], 5000);
    const stream = startSampler(new LocalExecutor(), { intervalMs: 60_000, local: true });
    assert.equal(processes(), before + 1, "only the first reading's host probe (loadavg, CPUs, governors in one shell) was spawned");
    assert.deepEqual(await answer, { code: null, stdout: '', stderr: 'spawn nvidia-smi ENOENT' });
    assert.equal((await stream.stop()).gpuUnavailable, 'nvidia-smi not found');
  });

  test('preflight: GPUs not checked (reason given), host checks still run', async (t) => {
    if (await hasNvidiaSmi()) return t.skip('nvidia-smi present');
    const report = await runPreflight(new LocalExecutor());
    assert.equal(report.gpuUnavailable, 'nvidia-smi not found');
    assert.ok(report.findings.every((finding) => finding.key.startsWith('host.')));
  });
});

describe('sampler through an SSH executor (the CI sshd on 127.0.0.1)', () => {
  const ci = ciSshd();
  test('host readings over SSH; the host’s missing nvidia-smi is reported, not fatal', needs(ci.skip), async (t) => {
    if (await hasNvidiaSmi()) return t.skip('nvidia-smi present');
    const sshd = ci.sshd!;
    const dir = tempDir(t, 'telemetry-ssh');
    const executor = new SshExecutor(
      {
        kind: 'ssh',
        host: sshd.host,
        port: sshd.port,
        identityFile: sshd.identityFile,
        sshOptions: [`UserKnownHostsFile=${sshd.knownHosts}`, 'StrictHostKeyChecking=yes'],
        remoteDir: join(dir, 'remote'),
        client: 'local',
      },
      { workDir: dir, log: () => {} },
    );
    t.after(() => executor.close());
    const runner = counting(executor);
    const sampler = startSampler(runner, { intervalMs: 100 });
    // Each reading is a round trip over SSH: wait for one, however long a loaded machine takes.
    assert.ok(await waitFor(() => runner.hostReadings >= 1, 30_000), 'a host reading over SSH');
    const series = await sampler.stop();
    assert.equal(series.gpuUnavailable, 'nvidia-smi not found');
    assert.ok(series.host.length >= 1, `${series.host.length} host samples`);
    assert.ok((series.cpus ?? 0) >= 1);
    const report = await runPreflight(executor);
    assert.equal(report.gpuUnavailable, 'nvidia-smi not found');
  });
});

describe('server metrics scraper', () => {
  test('vLLM-style series from the simulator’s /metrics; a server without the endpoint says so', async (t) => {
    const sim = await spawnSimulator(['--load-ms', '0']);
    t.after(() => sim.stop());
    const proxy = await countingProxy(t, sim.url);
    const scraper = startScraper(proxy.url, { intervalMs: 50 });
    assert.ok(await waitFor(() => proxy.relayed() >= 2, 30_000), 'two scrapes answered');
    const metrics = await scraper.stop();
    assert.equal(metrics.unavailable, undefined);
    const running = metrics.series.find((series) => series.name === 'vllm:num_requests_running');
    assert.ok(running && running.points.length >= 2, JSON.stringify(metrics.series.map((s) => s.name)));
    assert.ok(metrics.series.some((series) => series.name === 'vllm:spec_decode_num_drafts_total'));

    const missing = await startScraper('http://127.0.0.1:9', { intervalMs: 50, timeoutMs: 500 }).stop();
    assert.match(missing.unavailable ?? '', /^\/metrics unreachable/);
    assert.deepEqual(missing.series, []);
  });
});

describe('telemetry in an experiment run', () => {
  test('each trial stores its machine state and server metrics; `show` prints them', async (t) => {
    const dir = tempDir(t, 'telemetry');
    const store = join(dir, 'servelab.db');
    const file = writeExperiment(dir, 'exp.yaml', { name: 'telemetry', trials: 2, telemetry: { interval: 0.1 } });
    const run = await cli(['run', file], { store });
    assert.equal(run.code, 0, run.stderr);

    const db = new Database(store, { readonly: true });
    t.after(() => db.close());
    const rows = db.prepare('SELECT trial_id, summary_json, series_json, server_metrics_json FROM trial_telemetry ORDER BY trial_id').all() as Array<
      Record<string, string>
    >;
    assert.equal(rows.length, 2);
    for (const row of rows) {
      const series = JSON.parse(row.series_json!) as { host: unknown[] };
      assert.ok(series.host.length >= 1);
      const metrics = JSON.parse(row.server_metrics_json!) as { series: Array<{ name: string }> };
      assert.ok(metrics.series.some((line) => line.name === 'vllm:generation_tokens_total'));
    }

    // One line per variant, each finding once (not once per trial); the per-trial lines behind --machine.
    const show = await cli(['show', '1'], { store });
    assert.equal(show.code, 0, show.stderr);
    assert.match(
      show.stdout,
      /machine state per variant \(per trial: servelab show 1 --machine\):\n {2}baseline \(2 trials\): GPU telemetry unavailable: nvidia-smi not found; host: load [\d.–]+ median, [\d.]+ max on \d+ CPUs; [\d–]+ server metrics scraped\n\n/,
    );
    assert.equal(show.stdout.match(/nvidia-smi not found/g)?.length, 1);
    const detailed = await cli(['show', '1', '--machine'], { store });
    assert.equal(detailed.code, 0, detailed.stderr);
    assert.match(detailed.stdout, /machine state per trial:\n {2}trial 1\/\d+ baseline single-stream: \d+ server metrics scraped\n/);
    assert.match(detailed.stdout, /host: load [\d.]+ median/);
    assert.equal(detailed.stdout.match(/nvidia-smi not found/g)?.length, 2);

    const out = join(dir, 'report');
    const report = await cli(['report', '--out', out, '1'], { store });
    assert.equal(report.code, 0, report.stderr);
    const html = readFileSync(join(out, readdirSync(out).find((name) => name.endsWith('.html'))!), 'utf8');
    const machine = html.slice(html.indexOf('<h2>Machine state</h2>'));
    assert.equal(machine.match(/<details data-trial="\d+">/g)?.length, 2);
    assert.match(machine, /Host load/);
    assert.match(machine, /vllm:num_requests_running/);
    assert.match(machine, /GPU telemetry unavailable: nvidia-smi not found/);
  });

  test('an unknown preflight mode is a file error naming the key and the choices', async (t) => {
    const dir = tempDir(t, 'preflight');
    const file = writeExperiment(dir, 'exp.yaml', { preflight: 'sometimes' });
    const run = await cli(['run', file], { store: join(dir, 'servelab.db') });
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /exp\.yaml:\d+: preflight: expected one of "strict", "warn", "off", got "sometimes"/);
  });
});
