// servelab as a library: start the built-in simulator, wait until it really serves, measure, print tok/s.
import { BUILTIN_PROFILES, runBenchmark, startSimulator, waitForReady } from 'servelab';

const sim = await startSimulator({ startup: { loadMs: 200 } });
try {
  const ready = await waitForReady({ baseUrl: sim.url, profile: BUILTIN_PROFILES.simulator!, timeoutMs: 30_000 });
  const result = await runBenchmark({
    baseUrl: sim.url,
    backend: 'openai-completions',
    workload: { kind: 'single-stream', requests: 4 },
    prompts: { kind: 'synthetic', inputTokens: { kind: 'fixed', value: 32 }, outputTokens: { kind: 'fixed', value: 16 }, seed: 1 },
    warmupRequests: 1,
    ignoreEos: true,
    requestTimeoutMs: 30_000,
    specMetrics: 'none',
  });
  const level = result.levels[0]!;
  console.log(`ready after ${ready.elapsedMs.toFixed(0)} ms; ${level.completed} requests, ${level.outputTokensPerSecond.toFixed(1)} tok/s`);
} finally {
  await sim.close();
}
