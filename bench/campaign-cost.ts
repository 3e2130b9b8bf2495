/**
 * Campaign cost: wall time and correct-winner rate of three ways to find the best of 8 server configs.
 *
 *   node dist/bench/campaign-cost.js [--seeds 20] [--trials 12] [--scale 100] [--drift-pct-per-min 30] [--jitter 0.05]
 *                                      [--grid-seeds N] [--first-seed 1] [--only a,b,c] [--configs 8] [--lanes 1,2,4]
 *
 * Smoke setting (CI, test/bench-smoke.test.ts): --seeds 1 --configs 2 --trials 2 --scale 1000: every strategy (three
 * runs of one experiment name, which the reference guard once stopped), 10 server starts. `--configs N` shrinks the
 * campaign to `best` and N − 1 others.
 *
 * Eight simulator configs differ only in decode speed: `best` decodes 5% faster (tpot 0.95× the others'), the
 * seven others are equal. What makes real sweeps wrong is modelled: every delay has `--jitter` noise, every server
 * start draws a fresh simulator seed (the shell's pid), and the machine drifts slowly: decode steps get
 * `--drift-pct-per-min` % slower per minute of this bench's wall clock, across restarts (the simulator's
 * --drift-pct-per-min/--drift-since). The default 30 %/min gives ~6% over a sequential run (~13 s here) and ~20%
 * over the full grid (~40 s): the order of what 1 %/min (a few percent over minutes) does to a real 20 s-startup
 * campaign, whose sequential sweep takes ~9 min and full grid ~28 min. The whole campaign runs `--scale` times faster than the issue's: its 20 s
 * startup is 20000/scale ms and a trial (1 warm-up + 2 requests at 4 ms/token) has 640/scale tokens a request, so
 * the startup/trial ratio of the previous 1/20 bench (1 s start, 32 tokens, ~0.3 s trial) is kept. Node's
 * own process start (~0.2–0.5 s on a busy host) is not scaled and adds to every restart, so at large scales a
 * start costs more trials than intended — against restart-heavy strategies, i.e. (a).
 *
 *   (a) full interleaved grid: schedule interleaved, every config × trials (one start per config per block)
 *   (b) sequential, like a vLLM sweep script: schedule blocked with 1 pass (one start per config, N runs each)
 *   (c) racing with auto: stopping race, schedule auto (costed from the store's history of earlier runs)
 *
 * Each strategy runs the real runner (servers are real child processes, trials real HTTP) into one shared store,
 * so `auto` sees measured startup and trial times after the first runs. Each run's drift starts at its own start:
 * the server command reads that origin from a file written before the run (`--drift-since "$(cat …)"`) instead of
 * carrying the timestamp, because the drift models the machine, which no fingerprint sees: with the timestamp in
 * the command, every run of "campaign-cost" was a new configuration to the reference guard (the second run stopped
 * with "environment of c2 differs from run 1 … nothing was measured") and to the startup history `auto` reads.
 * Winner = rank 1 of the best-config verdict. The table prints wall time per run, its ratio against (a) on one lane
 * measured in the same bench, and the share of seeds that named `best`.
 *
 * `--lanes 1,2,4` runs every strategy on each number of lanes (experiment `lanes:`, local lanes told apart by a
 * LANE variable the simulator ignores): the lanes column shows what running blocks side by side saves for the same
 * answer (default: one lane).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { bestConfig } from '../src/experiment/analysis/best.js';
import { loadRun } from '../src/experiment/run/run-store.js';
import { runExperiment } from '../src/experiment/run/runner.js';
import { loadExperiment } from '../src/experiment/spec/load.js';
import { listRaceEvents } from '../src/store/campaign.js';
import { openStore } from '../src/store/db.js';
import { listTrials } from '../src/store/queries.js';
import { benchFlags, benchMain, noFigure, nonNegativeNumber, positiveInt, positiveNumber, usageError } from './support/main.js';

type Strategy = 'interleaved grid' | 'sequential' | 'race + auto';
const ALL_STRATEGIES: Array<{ name: Strategy; key: string; settings: Record<string, unknown> }> = [
  { name: 'interleaved grid', key: 'a', settings: { schedule: 'interleaved', stopping: 'fixed' } },
  { name: 'sequential', key: 'b', settings: { schedule: 'blocked', passes: 1, stopping: 'fixed' } },
  { name: 'race + auto', key: 'c', settings: { schedule: 'auto', stopping: 'race' } },
];

benchMain('campaign-cost', async () => {
  const values = benchFlags('campaign-cost', {
    options: {
      seeds: { type: 'string', default: '20' },
      // Resume a bench cut short, or run it in shards: seeds first-seed..seeds.
      'first-seed': { type: 'string', default: '1' },
      trials: { type: 'string', default: '12' },
      scale: { type: 'string', default: '100' },
      'drift-pct-per-min': { type: 'string', default: '30' },
      jitter: { type: 'string', default: '0.05' },
      // The full grid costs ~4× the other two together: it may run on the first N seeds of this invocation only
      // (its rate says of how many).
      'grid-seeds': { type: 'string' },
      // Some strategies only, by letter: --only b,c (the ratio column needs a).
      only: { type: 'string' },
      configs: { type: 'string', default: '8' },
      lanes: { type: 'string', default: '1' },
    },
  });
  const seeds = positiveInt('--seeds', values.seeds);
  const trials = positiveInt('--trials', values.trials);
  const scale = positiveNumber('--scale', values.scale);
  const startupMs = 20_000 / scale;
  // Decode steps stay 4 ms (a busy host's timer noise would swamp a 5% difference of sub-ms steps); the trial is
  // scaled through its length instead: 32 tokens a request at scale 20, as before.
  const tpotMs = 4;
  const ttftMs = 5;
  const outputTokens = Math.max(4, Math.round(640 / scale));
  const driftPerBenchMinute = nonNegativeNumber('--drift-pct-per-min', values['drift-pct-per-min']);
  const jitter = nonNegativeNumber('--jitter', values.jitter);
  const firstSeed = positiveInt('--first-seed', values['first-seed']);
  const lastGridSeed = firstSeed - 1 + (values['grid-seeds'] === undefined ? seeds : positiveInt('--grid-seeds', values['grid-seeds']));
  const configs = positiveInt('--configs', values.configs, 8);
  if (configs < 2) throw usageError('--configs must be at least 2 (best and one other)', 'e.g. --configs 3');
  if (firstSeed > seeds) throw usageError(`--first-seed ${firstSeed} is after --seeds ${seeds}: no seed to run`, `e.g. --first-seed 1 --seeds ${seeds}`);
  const laneCounts = values.lanes.split(',').map((count) => positiveInt('--lanes', count));
  const strategies = ALL_STRATEGIES.filter((strategy) => values.only === undefined || values.only.split(',').includes(strategy.key));
  if (strategies.length === 0) throw usageError(`--only ${values.only} names no strategy`, 'pick letters among a, b, c, e.g. --only b,c');

  const dir = mkdtempSync(join(tmpdir(), 'servelab-campaign-cost-'));
  const db = openStore(join(dir, 'servelab.db'));
  const driftOriginFile = join(dir, 'drift-since');

  /** The experiment file of one (seed, strategy): configs differ by env only, `best` by a 5% smaller tpot. */
  function experimentFile(seed: number, strategy: (typeof strategies)[number], lanes: number): string {
    const { settings } = strategy;
    const names = Array.from({ length: configs - 1 }, (_, index) => `c${index + 1}`);
    // The best config's position among the others changes with the seed.
    names.splice(seed % configs, 0, 'best');
    const file = join(dir, `seed-${seed}-${strategy.key}-${lanes}.yaml`);
    const command = `exec node {servelab} simulate --port {port} --load-ms ${startupMs} --tpot-ms "$TPOT_MS" --ttft-ms ${ttftMs} --jitter ${jitter} --drift-pct-per-min ${driftPerBenchMinute} --drift-since "$(cat '${driftOriginFile}')" --stats-interval-ms 0 --seed $$`;
    writeFileSync(
      file,
      stringify({
        // One name for every run: `auto` costs a plan from this experiment's earlier trials.
        name: 'campaign-cost',
        profile: 'simulator',
        server: { command: ['sh', '-c', command], env: { TPOT_MS: String(tpotMs) }, readyTimeout: '5m' },
        client: { prompts: { kind: 'synthetic', inputTokens: 16, outputTokens, seed }, warmupRequests: 1 },
        workloads: [{ kind: 'single-stream', requests: 2 }],
        trials,
        seed,
        // Configs are meant to differ; runs of one config across seeds are not a drift.
        drift: { relativeBand: 1, sigmas: 100 },
        baseline: names[0],
        variants: Object.fromEntries(names.map((name) => [name, { env: name === 'best' ? { TPOT_MS: String(tpotMs * 0.95) } : { CONFIG: name } }])),
        ...(lanes > 1 && { lanes: Array.from({ length: lanes }, (_, index) => ({ env: { LANE: String(index) } })) }),
        ...settings,
      }),
    );
    return file;
  }

  const results = new Map<string, Array<{ wallMs: number; correct: boolean; trials: number }>>();
  const rowKey = (strategy: Strategy, lanes: number) => `${strategy} ${lanes}`;
  try {
    for (let seed = firstSeed; seed <= seeds; seed += 1) {
      for (const [strategy, lanes] of strategies.flatMap((strategy) => laneCounts.map((lanes) => [strategy, lanes] as const))) {
        if (strategy.name === 'interleaved grid' && seed > lastGridSeed) continue;
        const started = Date.now();
        writeFileSync(driftOriginFile, String(started));
        const experiment = loadExperiment(experimentFile(seed, strategy, lanes));
        const outcome = await runExperiment({ db, experiment, workDir: join(dir, 'logs') });
        const wallMs = Date.now() - started;
        if (outcome.status !== 'done') {
          throw noFigure(
            `seed ${seed} ${strategy.name}: run ${outcome.runId} ended ${outcome.status}${outcome.message ? ` (${outcome.message})` : ''}`,
            "its wall time and winner would not be a campaign's: rerun (--first-seed resumes from that seed)",
          );
        }
        const eliminations = listRaceEvents(db, outcome.runId).flatMap((event) =>
          event.kind === 'eliminated' && event.variant !== undefined ? [{ variant: event.variant, afterPass: event.afterPass, reason: event.reason }] : [],
        );
        const measured = listTrials(db, outcome.runId);
        const { schedule } = loadRun(db, outcome.runId).plan;
        const winner = bestConfig(experiment, measured, { eliminations, blocked: schedule === 'blocked' }).winner;
        const key = rowKey(strategy.name, lanes);
        results.set(key, [...(results.get(key) ?? []), { wallMs, correct: winner === 'best', trials: measured.length }]);
        process.stderr.write(
          `seed ${seed} ${strategy.name}, ${lanes} lane${lanes === 1 ? '' : 's'}: ${(wallMs / 1000).toFixed(1)} s, ${schedule}, ${measured.length} trials, winner ${winner ?? '-'}\n`,
        );
      }
    }
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const mean = (list: number[]): number => list.reduce((sum, value) => sum + value, 0) / list.length;
  const gridRuns = results.get(rowKey('interleaved grid', 1)) ?? [];
  const reference = gridRuns.length > 0 ? mean(gridRuns.map((run) => run.wallMs)) : Number.NaN;
  console.log(
    `\ncampaign cost: ${configs} configs, one 5% faster; ${trials} trials cap; time scaled 1/${scale} (startup ${startupMs} ms for the issue's 20 s, ${outputTokens} tokens a request at ${tpotMs} ms); jitter ${jitter}; drift ${driftPerBenchMinute}%/bench-minute; seeds ${firstSeed}..${seeds} (full grid on seeds ${firstSeed}..${Math.min(seeds, lastGridSeed)})`,
  );
  console.log('strategy           lanes  mean wall  vs (a)   mean trials  correct winner');
  for (const [strategy, lanes] of strategies.flatMap((strategy) => laneCounts.map((lanes) => [strategy, lanes] as const))) {
    const runs = results.get(rowKey(strategy.name, lanes)) ?? [];
    if (runs.length === 0) continue;
    const wall = mean(runs.map((run) => run.wallMs));
    console.log(
      `${strategy.name.padEnd(17)}  ${String(lanes).padStart(5)}  ${`${(wall / 1000).toFixed(1)} s`.padStart(9)}  ${(Number.isNaN(reference) ? '-' : `${(reference / wall).toFixed(2)}×`).padStart(6)}  ${mean(
        runs.map((run) => run.trials),
      )
        .toFixed(1)
        .padStart(11)}  ${`${runs.filter((run) => run.correct).length}/${runs.length}`.padStart(14)}`,
    );
  }
});
