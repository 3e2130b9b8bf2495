/**
 * Search cost: GPU-hours to find the best speculative-decoding config per load level, for four ways of looking.
 *
 *   node dist/bench/search-cost.js [--seeds 20] [--first-seed 1] [--tolerance 0.02] [--cv 0.02] [--start-cv 0.01]
 *                                  [--drift 0.01] [--start-min 10] [--start-max 15] [--trial-min 2] [--gpus 1]
 *                                  [--grid-blocks 3] [--block-size N] [--initial-points N] [--trials-per-start 1]
 *                                  [--tie-break] [--breakdown]
 *
 * Smoke setting (CI, test/bench-smoke.test.ts): --seeds 1 --grid-blocks 1
 *
 * The space is issue 35's SGLang EAGLE-3 space: steps 1–6 × topk {1, 2, 4, 8} × draft tokens 2–16 (SGLang's
 * speculative_num_draft_tokens, the root counted) with SGLang's constraint draftTokens ≤ steps·topk + 1: 215
 * valid points, each its own server start. The truth at each level (concurrency 1, 8, 32) is the simulator's own
 * steady-state decode throughput (`expectedDecodeTokensPerSecond`, src/simulate/model.ts) with verify work that
 * grows with batch × draft tokens (`--spec-verify-batch-cost`), so the best depth falls with load as on real
 * engines; the true best per level is known exactly.
 *
 * Nothing is started: a virtual clock charges what a real campaign pays. A server start costs a uniform draw of
 * --start-min..--start-max minutes (10–15 min: an H100 box loading a large model and capturing CUDA graphs), a
 * trial --trial-min minutes per level. The machine is noisy as a GPU box is: each trial's value has a --cv
 * coefficient of variation, each start shifts all its trials by --start-cv, and the machine drifts as a random walk
 * of --drift per √hour of the clock (so a block of starts shares most of its drift, a sequential sweep does not).
 * GPU-hours = clock hours × --gpus (the server's GPUs).
 *
 *   (a) search: searchStep (src/experiment/search/strategy.ts), tolerance --tolerance, 95% confidence, driven
 *       block by block: every point of a block started once and measured at the three levels, --trials-per-start
 *       trials each (the file's `search.trialsPerStart`). The default stays 1: at the default noise, 2 to 4 trials
 *       a start cost more GPU-hours than they save in starts (docs/benchmarks.md has a row per count).
 *   (b) full interleaved grid: --grid-blocks blocks, each starting every point once (shuffled), one trial per
 *       level; the answer per level is the best median.
 *   (c) random search with the same GPU-hours as (a) had on that seed: points in random order, each started and
 *       measured once, until the hours are spent; the answer is the best value seen.
 *   (d) vLLM's rule (benchmarks/auto_tune / tune_speculative_k style): every point started once and run 3 times per
 *       level; points whose relative MAD exceeds 0.1 dropped; the answer is the smallest config (fewest draft
 *       tokens, then steps, then topk) whose median is within 1% of the best median.
 *
 * --tie-break: the search prefers fewest draft tokens, then fewest steps, among points shown within the tolerance
 * (examples/search-spec-decode.yaml's `tieBreak: [draftTokens, steps]`), which races those points further.
 * --breakdown: where the search's starts went (first block, new points, leaders re-measured, other points raced:
 * within the tolerance of some race's best or not), per seed and on average, and for each wrong answer whether the
 * good points of that race were never measured or dropped (with the block and the strategy's reason).
 *
 * An answer is right when, at every level, its true throughput is within the tolerance of that level's true best,
 * and across levels its geometric mean of per-level ratios to each level's best is within the tolerance of the
 * best such mean. The last line: `search vs grid: N.N× fewer GPU-hours, P% of seeds within tolerance (…)`.
 */

import { ACROSS_LEVELS, searchStep } from '../src/experiment/search/strategy.js';
import { pointKey, type SearchObservation, type SearchPoint, type SearchSpace } from '../src/experiment/search/types.js';
import { parseSimConfig } from '../src/simulate/config.js';
import { expectedDecodeTokensPerSecond } from '../src/simulate/model.js';
import { deriveSeed, mulberry32, type Random, standardNormal } from '../src/util/random.js';
import { benchFlags, benchMain, noFigure, nonNegativeNumber, positiveInt, positiveNumber, usageError } from './support/main.js';

const LEVELS = [
  { name: 'c1', concurrency: 1 },
  { name: 'c8', concurrency: 8 },
  { name: 'c32', concurrency: 32 },
] as const;
const CONFIDENCE = 0.95;
/** A search that has not decided after this many blocks is broken, not slow. */
const MAX_BLOCKS = 200;

/** The simulator's EAGLE-3 personality for this bench: a draft model accepted 80% at depth 1, 0.9× per depth after. */
const SPEC_PROFILE = { acceptance: 0.8, acceptanceDecay: 0.9, draftOverhead: 0.02, draftStepCost: 0.1, verifyBatchCost: 0.01 };

function eagleSpace(): SearchSpace {
  const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const points: SearchPoint[] = [];
  for (const steps of range(1, 6))
    for (const topk of [1, 2, 4, 8]) for (const draftTokens of range(2, 16)) if (draftTokens <= steps * topk + 1) points.push({ steps, topk, draftTokens });
  return {
    knobs: [
      { name: 'steps', values: range(1, 6), numeric: true, log: false },
      { name: 'topk', values: [1, 2, 4, 8], numeric: true, log: true },
      { name: 'draftTokens', values: range(2, 16), numeric: true, log: false },
    ],
    points,
  };
}

/** True decode tok/s of a point at each level, as the simulator would serve it. */
function truthOf(point: SearchPoint): number[] {
  const config = parseSimConfig({
    decode: {
      tpotMs: 10,
      concurrencySlowdown: 0.02,
      // SGLang's speculative_num_draft_tokens counts the tree's root: the simulator's drafts are one fewer.
      spec: { steps: Number(point.steps), topk: Number(point.topk), draftTokens: Number(point.draftTokens) - 1, ...SPEC_PROFILE },
    },
  });
  return LEVELS.map((level) => expectedDecodeTokensPerSecond(config, level.concurrency));
}

interface MachineSettings {
  cv: number;
  startCv: number;
  drift: number;
  startMin: number;
  startMax: number;
  trialMin: number;
}

/** A GPU box on a virtual clock: starts and trials cost minutes, values carry trial noise, start effects and drift. */
class Machine {
  hours = 0;
  private logDrift = 0;
  private startEffect = 0;
  constructor(
    private readonly settings: MachineSettings,
    private readonly rng: Random,
  ) {}

  private advance(minutes: number): void {
    this.hours += minutes / 60;
    this.logDrift += this.settings.drift * Math.sqrt(minutes / 60) * standardNormal(this.rng);
  }

  start(): void {
    const { startMin, startMax, startCv } = this.settings;
    this.advance(startMin + (startMax - startMin) * this.rng());
    this.startEffect = startCv * standardNormal(this.rng);
  }

  trial(truth: number): number {
    this.advance(this.settings.trialMin);
    return truth * Math.exp(this.logDrift + this.startEffect + this.settings.cv * standardNormal(this.rng));
  }
}

interface Outcome {
  hours: number;
  right: boolean;
  starts: number;
  points: number;
}

/** Where a search's starts went (--breakdown). */
interface StartRoles {
  firstBlock: number;
  newPoints: number;
  leaders: number;
  /** Re-measures of points within the tolerance of some race's true best, and of the others. */
  nearRaced: number;
  farRaced: number;
}

/** Per level a point key, and one across levels. */
interface Answer {
  perLevel: string[];
  across: string;
}

benchMain('search-cost', async () => {
  const values = benchFlags('search-cost', {
    options: {
      seeds: { type: 'string', default: '20' },
      'first-seed': { type: 'string', default: '1' },
      tolerance: { type: 'string', default: '0.02' },
      cv: { type: 'string', default: '0.02' },
      'start-cv': { type: 'string', default: '0.01' },
      drift: { type: 'string', default: '0.01' },
      'start-min': { type: 'string', default: '10' },
      'start-max': { type: 'string', default: '15' },
      'trial-min': { type: 'string', default: '2' },
      gpus: { type: 'string', default: '1' },
      'grid-blocks': { type: 'string', default: '3' },
      // The strategy's own settings (SearchSettings.blockSize, initialPoints); default: the strategy's defaults.
      'block-size': { type: 'string' },
      'initial-points': { type: 'string' },
      'trials-per-start': { type: 'string', default: '1' },
      'tie-break': { type: 'boolean', default: false },
      breakdown: { type: 'boolean', default: false },
    },
  });
  const seeds = positiveInt('--seeds', values.seeds);
  const firstSeed = positiveInt('--first-seed', values['first-seed']);
  if (firstSeed > seeds) throw usageError(`--first-seed ${firstSeed} is after --seeds ${seeds}: no seed to run`, `e.g. --first-seed 1 --seeds ${seeds}`);
  const tolerance = positiveNumber('--tolerance', values.tolerance);
  if (tolerance >= 1) throw usageError(`--tolerance is a fraction below 1, got ${tolerance}`, 'e.g. --tolerance 0.02 for 2%');
  const machine: MachineSettings = {
    cv: nonNegativeNumber('--cv', values.cv),
    startCv: nonNegativeNumber('--start-cv', values['start-cv']),
    drift: nonNegativeNumber('--drift', values.drift),
    startMin: nonNegativeNumber('--start-min', values['start-min']),
    startMax: nonNegativeNumber('--start-max', values['start-max']),
    trialMin: positiveNumber('--trial-min', values['trial-min']),
  };
  if (machine.startMax < machine.startMin) throw usageError('--start-max is below --start-min', 'e.g. --start-min 10 --start-max 15');
  const gpus = positiveInt('--gpus', values.gpus);
  const gridBlocks = positiveInt('--grid-blocks', values['grid-blocks']);
  const breakdown = values.breakdown;
  const trialsPerStart = positiveInt('--trials-per-start', values['trials-per-start']);
  const strategySettings = {
    ...(values['block-size'] !== undefined && { blockSize: positiveInt('--block-size', values['block-size']) }),
    ...(values['initial-points'] !== undefined && { initialPoints: positiveInt('--initial-points', values['initial-points']) }),
    ...(values['tie-break'] && {
      tieBreak: (a: SearchPoint, b: SearchPoint) => Number(a.draftTokens) - Number(b.draftTokens) || Number(a.steps) - Number(b.steps),
    }),
  };

  const space = eagleSpace();
  const keys = space.points.map((point) => pointKey(space, point));
  const truth = new Map(keys.map((key, index) => [key, truthOf(space.points[index]!)]));
  const levelBest = LEVELS.map((_, level) => Math.max(...keys.map((key) => truth.get(key)![level]!)));
  const acrossScore = (key: string): number => LEVELS.reduce((sum, _, level) => sum + Math.log(truth.get(key)![level]! / levelBest[level]!), 0) / LEVELS.length;
  const acrossBest = Math.max(...keys.map(acrossScore));
  const isRight = (answer: Answer): boolean =>
    answer.perLevel.every((key, level) => truth.get(key)![level]! >= (1 - tolerance) * levelBest[level]!) &&
    Math.exp(acrossScore(answer.across) - acrossBest) >= 1 - tolerance;

  const races = [...LEVELS.map((level) => level.name), ACROSS_LEVELS];
  /** A point's true value at race `race` (a level's index, or LEVELS.length for across) as a share of its best. */
  const shareOfBest = (key: string, race: number): number =>
    race < LEVELS.length ? truth.get(key)![race]! / levelBest[race]! : Math.exp(acrossScore(key) - acrossBest);
  const good = (key: string, race: number): boolean => shareOfBest(key, race) >= 1 - tolerance;
  const roles: StartRoles = { firstBlock: 0, newPoints: 0, leaders: 0, nearRaced: 0, farRaced: 0 };

  const bestKeyAt = (level: number): string => keys.reduce((best, key) => (truth.get(key)![level]! > truth.get(best)![level]! ? key : best));
  const acrossKey = keys.reduce((best, key) => (acrossScore(key) > acrossScore(best) ? key : best));
  console.log(`space: ${keys.length} valid points; levels ${LEVELS.map((level) => level.name).join(', ')}; tolerance ${tolerance * 100}%`);
  for (const [index, level] of LEVELS.entries()) {
    const best = bestKeyAt(index);
    const within = keys.filter((key) => truth.get(key)![index]! >= (1 - tolerance) * levelBest[index]!).length;
    console.log(`  true best at ${level.name}: ${best} (${levelBest[index]!.toFixed(0)} tok/s; ${within} points within ${tolerance * 100}%)`);
  }
  console.log(`  true best across levels: ${acrossKey} (geometric mean ${(Math.exp(acrossBest) * 100).toFixed(1)}% of each level's best)`);

  /** Answer per level and across from per-point values per level (e.g. medians), higher is better. */
  const bestBy = (summary: Map<string, number[]>): Answer => {
    const measured = [...summary.keys()];
    const perLevel = LEVELS.map((_, level) => measured.reduce((best, key) => (summary.get(key)![level]! > summary.get(best)![level]! ? key : best)));
    const score = (key: string): number => summary.get(key)!.reduce((sum, value, level) => sum + Math.log(value / summary.get(perLevel[level]!)![level]!), 0);
    return { perLevel, across: measured.reduce((best, key) => (score(key) > score(best) ? key : best)) };
  };

  function search(seed: number): Outcome {
    const box = new Machine(machine, mulberry32(deriveSeed(seed, 1)));
    const observations: SearchObservation[] = [];
    const dropped = new Map<string, string>();
    const started = new Map<string, number>();
    const droppedAt = new Map<string, number>();
    const seedRoles: StartRoles = { firstBlock: 0, newPoints: 0, leaders: 0, nearRaced: 0, farRaced: 0 };
    let starts = 0;
    for (let block = 0; block < MAX_BLOCKS; block += 1) {
      const step = searchStep(
        space,
        { direction: 'maximize', tolerance, confidence: CONFIDENCE, levels: LEVELS.map((level) => level.name), seed, ...strategySettings },
        { observations, spent: box.hours, dropped },
      );
      for (const entry of step.drop) {
        dropped.set(entry.point, entry.reason);
        droppedAt.set(entry.point, block);
      }
      if (step.done) {
        const leader = (name: string): string => {
          const found = step.leaders.find((entry) => entry.level === name);
          if (!found)
            throw noFigure(
              `seed ${seed}: the search ended without a leader for ${name} (${step.done?.reason})`,
              'a bug in the strategy: rerun with --seeds 1 to see it',
            );
          return found.point;
        };
        const answer = { perLevel: LEVELS.map((level) => leader(level.name)), across: leader(ACROSS_LEVELS) };
        const right = isRight(answer);
        if (breakdown) {
          for (const role of Object.keys(roles) as Array<keyof StartRoles>) roles[role] += seedRoles[role];
          const share = (key: string, race: number): string => `${(100 * shareOfBest(key, race)).toFixed(1)}%`;
          console.log(
            `seed ${seed}: ${starts} starts (${seedRoles.firstBlock} first block, ${seedRoles.newPoints} new points, ${seedRoles.leaders} leaders, ` +
              `${seedRoles.nearRaced} + ${seedRoles.farRaced} other points raced within + beyond the tolerance), ${right ? 'right' : 'WRONG'}`,
          );
          for (const [race, name] of races.entries()) {
            const chosen = race < LEVELS.length ? answer.perLevel[race]! : answer.across;
            if (good(chosen, race)) continue;
            const goods = keys.filter((key) => good(key, race));
            const fates = goods.map((key) => {
              const times = started.get(key);
              if (times === undefined) return `${key} (${share(key, race)}): never measured`;
              const at = droppedAt.get(key);
              return `${key} (${share(key, race)}): ${times} starts, ${at === undefined ? 'not dropped' : `dropped after block ${at}: ${dropped.get(key)}`}`;
            });
            console.log(
              `  ${name}: answered ${chosen} at ${share(chosen, race)} of the best; the ${goods.length} within the tolerance:\n    ${fates.join('\n    ')}`,
            );
          }
        }
        return { hours: box.hours * gpus, right, starts, points: started.size };
      }
      for (const point of step.measure) {
        const key = pointKey(space, point);
        box.start();
        starts += 1;
        if (block === 0) seedRoles.firstBlock += 1;
        else if (!started.has(key)) seedRoles.newPoints += 1;
        else if (step.leaders.some((entry) => entry.point === key)) seedRoles.leaders += 1;
        else if (races.some((_, race) => good(key, race))) seedRoles.nearRaced += 1;
        else seedRoles.farRaced += 1;
        started.set(key, (started.get(key) ?? 0) + 1);
        for (const [index, level] of LEVELS.entries())
          for (let trial = 0; trial < trialsPerStart; trial += 1)
            observations.push({ point: key, level: level.name, block, value: box.trial(truth.get(key)![index]!) });
      }
    }
    throw noFigure(`seed ${seed}: the search did not decide within ${MAX_BLOCKS} blocks`, 'a bug in the strategy: rerun with --seeds 1 to see it');
  }

  function grid(seed: number): Outcome {
    const rng = mulberry32(deriveSeed(seed, 2));
    const box = new Machine(machine, rng);
    const measured = new Map<string, number[][]>(keys.map((key) => [key, LEVELS.map(() => [])]));
    for (let block = 0; block < gridBlocks; block += 1) {
      for (const key of shuffled(keys, rng)) {
        box.start();
        for (const [index] of LEVELS.entries()) measured.get(key)![index]!.push(box.trial(truth.get(key)![index]!));
      }
    }
    const medians = new Map([...measured].map(([key, perLevel]) => [key, perLevel.map(median)]));
    return { hours: box.hours * gpus, right: isRight(bestBy(medians)), starts: keys.length * gridBlocks, points: keys.length };
  }

  function random(seed: number, hours: number): Outcome {
    const rng = mulberry32(deriveSeed(seed, 3));
    const box = new Machine(machine, rng);
    const seen = new Map<string, number[]>();
    for (const key of shuffled(keys, rng)) {
      if (box.hours * gpus >= hours) break;
      box.start();
      seen.set(
        key,
        LEVELS.map((_, index) => box.trial(truth.get(key)![index]!)),
      );
    }
    return { hours: box.hours * gpus, right: isRight(bestBy(seen)), starts: seen.size, points: seen.size };
  }

  function vllmRule(seed: number): Outcome {
    const rng = mulberry32(deriveSeed(seed, 4));
    const box = new Machine(machine, rng);
    const runs = new Map<string, number[][]>();
    for (const key of keys) {
      box.start();
      runs.set(
        key,
        LEVELS.map((_, index) => [0, 1, 2].map(() => box.trial(truth.get(key)![index]!))),
      );
    }
    const kept = [...runs].filter(([, perLevel]) => perLevel.every((values) => relativeMad(values) <= 0.1));
    const medians = new Map(kept.map(([key, perLevel]) => [key, perLevel.map(median)]));
    const order = (key: string): number[] => {
      const point = space.points[keys.indexOf(key)]!;
      return [Number(point.draftTokens), Number(point.steps), Number(point.topk)];
    };
    const smallest = (candidates: string[]): string => candidates.sort((a, b) => compareLists(order(a), order(b)))[0]!;
    const best = bestBy(medians);
    const perLevel = LEVELS.map((_, level) => {
      const top = medians.get(best.perLevel[level]!)![level]!;
      return smallest([...medians.keys()].filter((key) => medians.get(key)![level]! >= 0.99 * top));
    });
    const score = (key: string): number =>
      medians.get(key)!.reduce((sum, value, level) => sum + Math.log(value / medians.get(best.perLevel[level]!)![level]!), 0) / LEVELS.length;
    const topAcross = score(best.across);
    const across = smallest([...medians.keys()].filter((key) => score(key) >= topAcross + Math.log(0.99)));
    return { hours: box.hours * gpus, right: isRight({ perLevel, across }), starts: keys.length, points: keys.length };
  }

  const results: Record<'search' | 'grid' | 'random' | 'vllm', Outcome[]> = { search: [], grid: [], random: [], vllm: [] };
  for (let seed = firstSeed; seed <= seeds; seed += 1) {
    const found = search(seed);
    results.search.push(found);
    results.grid.push(grid(seed));
    results.random.push(random(seed, found.hours));
    results.vllm.push(vllmRule(seed));
  }

  const count = seeds - firstSeed + 1;
  if (breakdown) {
    const mean = (role: keyof StartRoles): string => (roles[role] / count).toFixed(1);
    console.log(
      `starts per seed (mean): ${mean('firstBlock')} first block, ${mean('newPoints')} new points, ${mean('leaders')} leaders re-measured, ` +
        `${mean('nearRaced')} other points within the tolerance of a race's best raced, ${mean('farRaced')} beyond it`,
    );
  }
  const meanHours = (outcomes: Outcome[]): number => outcomes.reduce((sum, outcome) => sum + outcome.hours, 0) / outcomes.length;
  const rightShare = (outcomes: Outcome[]): number => (100 * outcomes.filter((outcome) => outcome.right).length) / outcomes.length;
  const gridHours = meanHours(results.grid);
  console.log('');
  console.log(`strategy                        GPU-hours (mean)   vs grid   starts   points   right (within ${tolerance * 100}%)`);
  const rows: Array<[string, Outcome[]]> = [
    ['(a) search', results.search],
    ['(b) full interleaved grid', results.grid],
    ['(c) random search, same hours', results.random],
    ["(d) vLLM's rule (3 runs, 1%)", results.vllm],
  ];
  for (const [name, outcomes] of rows) {
    const mean = (pick: (outcome: Outcome) => number): string => (outcomes.reduce((sum, outcome) => sum + pick(outcome), 0) / outcomes.length).toFixed(0);
    console.log(
      `${name.padEnd(31)} ${meanHours(outcomes).toFixed(1).padStart(16)}   ${`${(gridHours / meanHours(outcomes)).toFixed(1)}×`.padStart(7)}   ${mean((outcome) => outcome.starts).padStart(6)}   ${mean((outcome) => outcome.points).padStart(6)}   ${outcomes.filter((outcome) => outcome.right).length}/${count}`,
    );
  }
  const ratio = gridHours / meanHours(results.search);
  console.log(
    `search vs grid: ${ratio.toFixed(1)}× fewer GPU-hours, ${rightShare(results.search).toFixed(0)}% of seeds within tolerance ` +
      `(random search: ${rightShare(results.random).toFixed(0)}% at the same GPU-hours; full grid: ${rightShare(results.grid).toFixed(0)}% at ${gridHours.toFixed(0)} GPU-hours; ` +
      `vLLM's rule: ${rightShare(results.vllm).toFixed(0)}% at ${meanHours(results.vllm).toFixed(0)} GPU-hours)`,
  );
});

function shuffled<T>(items: readonly T[], rng: Random): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(rng() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

function relativeMad(values: readonly number[]): number {
  const centre = median(values);
  return median(values.map((value) => Math.abs(value - centre))) / centre;
}

function compareLists(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i += 1) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}
