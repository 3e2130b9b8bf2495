import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, type TestContext, test } from 'node:test';
import { Agent, request } from 'undici';
import { scrapeSpecCounters, specFromCounterDelta } from '../src/load/spec.js';
import { parsePrometheusTotals } from '../src/metrics/prometheus.js';
import { SERVELAB_BIN, type SimulatorProcess, spawnSimulator } from '../src/simulate/child.js';

const UVICORN = /Uvicorn running on http:\/\/127\.0\.0\.1:\d+/;

async function start(t: TestContext, args: string[]): Promise<SimulatorProcess> {
  const sim = await spawnSimulator(args);
  t.after(() => sim.stop());
  return sim;
}

/** One request on a connection of its own: the cluster primary hands connections to workers in turn. */
async function freshConnection<T>(url: string, options: { method?: 'GET' | 'POST'; body?: unknown } = {}): Promise<{ status: number; body: T }> {
  const agent = new Agent({ pipelining: 0 });
  try {
    const response = await request(url, {
      dispatcher: agent,
      method: options.method ?? 'GET',
      headers: { 'content-type': 'application/json' },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      headersTimeout: 10_000,
      bodyTimeout: 10_000,
    });
    return { status: response.statusCode, body: (await response.body.json()) as T };
  } finally {
    await agent.close();
  }
}

interface LlamaResponse {
  tokens_predicted: number;
  tokens_evaluated: number;
  timings: { draft_n: number; draft_n_accepted: number };
}

describe('servelab simulate --workers', () => {
  test('spreads requests over workers; /metrics sums them exactly, so spec counter deltas match the responses', async (t) => {
    const sim = await start(t, [
      '--workers',
      '3',
      '--load-ms',
      '400',
      '--tpot-ms',
      '0',
      '--ttft-ms',
      '0',
      '--spec-draft-tokens',
      '4',
      '--spec-acceptance',
      '0.6',
    ]);
    // Every worker is still loading, then every worker serves once the one Uvicorn line is out.
    const loading = await Promise.all([1, 2, 3].map(() => freshConnection<{ status: string }>(`${sim.url}/health`)));
    assert.deepEqual(
      loading.map((answer) => answer.status),
      [503, 503, 503],
    );
    await sim.waitForLine(UVICORN, 15_000);
    assert.equal(sim.output().match(/Uvicorn running on/g)?.length, 1, 'startup played once, by the primary');

    const agent = new Agent();
    t.after(() => agent.close());
    const before = await scrapeSpecCounters(agent, sim.url);
    assert.ok(before);
    const requests = 24;
    const answers = await Promise.all(
      Array.from({ length: requests }, (_, index) =>
        freshConnection<LlamaResponse>(`${sim.url}/completion`, {
          method: 'POST',
          body: { prompt: `question ${index} about kernels`, n_predict: 20 + index, ignore_eos: true },
        }),
      ),
    );
    for (const answer of answers) assert.equal(answer.status, 200);
    const after = await scrapeSpecCounters(agent, sim.url);
    assert.ok(after);

    const state = await freshConnection<{ workers: { requestsFinished: number }[] }>(`${sim.url}/sim/state`);
    const perWorker = state.body.workers.map((worker) => worker.requestsFinished);
    assert.equal(perWorker.length, 3);
    assert.equal(
      perWorker.reduce((sum, count) => sum + count, 0),
      requests,
    );
    assert.ok(
      perWorker.every((count) => count > 0),
      `every worker served some: ${perWorker.join(', ')}`,
    );

    const metrics = await request(`${sim.url}/metrics`, { dispatcher: agent });
    const counters = parsePrometheusTotals(await metrics.body.text());
    const sum = (pick: (answer: LlamaResponse) => number): number => answers.reduce((total, answer) => total + pick(answer.body), 0);
    assert.equal(counters.get('vllm:request_success_total'), requests);
    assert.equal(
      counters.get('vllm:generation_tokens_total'),
      sum((answer) => answer.tokens_predicted),
    );
    assert.equal(
      counters.get('vllm:prompt_tokens_total'),
      sum((answer) => answer.tokens_evaluated),
    );

    const fromCounters = specFromCounterDelta(before, after, 'vllm counters');
    assert.ok(fromCounters);
    assert.equal(
      fromCounters.draftTokens,
      sum((answer) => answer.timings.draft_n),
    );
    assert.equal(
      fromCounters.acceptedTokens,
      sum((answer) => answer.timings.draft_n_accepted),
    );
    assert.equal(fromCounters.acceptanceRate, sum((answer) => answer.timings.draft_n_accepted) / sum((answer) => answer.timings.draft_n));
  });

  test('a simulated crash ends the primary with exit 1 and the traceback; --prefix-cache with workers is a usage error', async () => {
    const crash = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      execFile(
        process.execPath,
        [SERVELAB_BIN, 'simulate', '--workers', '2', '--load-ms', '300', '--fail', 'crash'],
        { encoding: 'utf8', timeout: 30_000 },
        (error, stdout) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout }),
      );
    });
    assert.equal(crash.code, 1);
    assert.match(crash.stdout, /RuntimeError: Engine core initialization failed/);

    const usage = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [SERVELAB_BIN, 'simulate', '--workers', '2', '--prefix-cache'],
        { encoding: 'utf8', timeout: 30_000 },
        (error, _stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
      );
    });
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--prefix-cache cannot be combined with --workers/);
  });

  test('SIGTERM to the whole process group (as a launcher sends it) is a clean shutdown: exit 0, no worker left', async () => {
    const child = spawn(process.execPath, [SERVELAB_BIN, 'simulate', '--workers', '2', '--load-ms', '100'], {
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    for (let waited = 0; !UVICORN.test(output) && waited < 15_000; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.match(output, UVICORN);
    process.kill(-child.pid!, 'SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0, output);
    assert.match(output, /Finished server process/);
    assert.doesNotMatch(output, /worker \d exited/);
    // Nothing of the group survives its primary.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.throws(() => process.kill(-child.pid!, 0), /ESRCH/);
  });
});
