import { capacityText } from '../metrics/table.js';
import type { CapacitySearch, CapacitySlo, CapacityStep, LevelResult, Summary } from '../metrics/types.js';
import { formatNumber } from '../util/format.js';
import { type CapacityWorkload, capacityLevelPlan, type LevelPlan } from './level.js';

/**
 * SLO capacity search: the highest request rate (or concurrency) at which a server still meets p99 latency SLOs.
 *
 * Why inside one trial: each search is one measurement, so repeated trials give its spread and confidence interval
 * and the verdicts, race and `best` use `sloCapacity` like any other metric. The SLO belongs to the workload, not to
 * the client's goodput `slo` (per request, per variant) nor to the objective: the capacity is what the workload
 * measures, and two variants must be searched against the same limits.
 *
 * The rule of a step: one level measured at the step's rate or concurrency; it passes when no request failed and
 * every SLO's p99 over its completed requests (the summary's p99, linear interpolation) is within its limit. From
 * fewer than MIN_P99_REQUESTS requests that p99 is close to the largest one: the search notes it.
 *
 * The search: bisection between min and max at the geometric midpoint (ranges span decades, 0.5..32 req/s; the
 * error then shrinks as a ratio at every level); concurrency is rounded to whole requests. min and max are assumed
 * pass/fail and only measured at the end when nothing else decided: no step passed (min is measured: 0 when it fails
 * too) or none failed (max is measured: "≥ max" when it passes). So a search measures at most steps + 1 levels. It
 * assumes latency grows with load; noise near the capacity can move the answer by a step, which trials then show.
 */

/** Below this many requests a step's p99 is nearly its maximum (one slow request decides it). */
export const MIN_P99_REQUESTS = 100;

/** The most levels a search measures: its bisection steps, plus one bound check. */
export function capacityLevelCount(workload: CapacityWorkload): number {
  return workload.steps + 1;
}

/** Geometric midpoint strictly inside (low, high), or undefined when none is left (adjacent concurrencies). */
export function midpoint(over: CapacityWorkload['over'], low: number, high: number): number | undefined {
  const middle = Math.sqrt(low * high);
  if (over === 'concurrency') {
    if (high - low <= 1) return undefined;
    return Math.min(high - 1, Math.max(low + 1, Math.round(middle)));
  }
  // Three significant figures: the label, the offered rate and the stored step say the same number.
  const rounded = Number(middle.toPrecision(3));
  return rounded > low && rounded < high ? rounded : undefined;
}

/** The next level to measure, or undefined when the search is done. Pure: decided by the steps so far. */
export function nextCapacityLevel(workload: CapacityWorkload, steps: readonly Pick<CapacityStep, 'at' | 'passed'>[]): number | undefined {
  let low = workload.min;
  let high = workload.max;
  for (const step of steps) {
    if (step.passed) low = Math.max(low, step.at);
    else high = Math.min(high, step.at);
  }
  if (steps.length < workload.steps) {
    const next = midpoint(workload.over, low, high);
    if (next !== undefined) return next;
  }
  const measured = (at: number) => steps.some((step) => step.at === at);
  if (!steps.some((step) => step.passed) && !measured(workload.min)) return workload.min;
  if (!steps.some((step) => !step.passed) && !measured(workload.max)) return workload.max;
  return undefined;
}

const SLO_FIGURES: ReadonlyArray<{ key: keyof CapacitySlo; name: string; summary: (level: LevelResult) => Summary }> = [
  { key: 'ttftP99Ms', name: 'TTFT', summary: (level) => level.ttftMs },
  { key: 'tpotP99Ms', name: 'TPOT', summary: (level) => level.tpotMs },
  { key: 'e2eP99Ms', name: 'E2E', summary: (level) => level.e2eMs },
];

/** Whether a measured step meets the SLOs with no request failed, and if not the first reason. Pure. */
export function judgeStep(level: LevelResult, slo: CapacitySlo): { passed: boolean; why?: string } {
  if (level.failed > 0) return { passed: false, why: `${level.failed} request(s) failed` };
  if (level.stopped !== undefined) return { passed: false, why: level.stopped };
  for (const figure of SLO_FIGURES) {
    const limit = slo[figure.key];
    if (limit === undefined) continue;
    const summary = figure.summary(level);
    if (summary.count === 0) return { passed: false, why: `no ${figure.name} measured` };
    if (summary.p99 > limit) return { passed: false, why: `${figure.name} p99 ${formatNumber(summary.p99)} ms > ${formatNumber(limit)} ms` };
  }
  return { passed: true };
}

/** The capacity the steps show: the highest passing level (0 when none), the lowest failing one, and notes. Pure. */
export function capacityOf(workload: CapacityWorkload, steps: readonly CapacityStep[]): CapacitySearch {
  const passed = steps.filter((step) => step.passed).map((step) => step.at);
  const failed = steps.filter((step) => !step.passed).map((step) => step.at);
  const value = passed.length > 0 ? Math.max(...passed) : 0;
  const level = (at: number) => capacityText(workload.over, at);
  const notes: string[] = [];
  if (steps.length > 0 && passed.length === 0) notes.push(noCapacityNote(workload, steps));
  if (failed.length === 0 && passed.includes(workload.max)) {
    notes.push(`≥ ${level(workload.max)}: the highest level asked for met the SLOs; raise max to find the capacity`);
  }
  const upper = failed.length > 0 ? Math.min(...failed) : undefined;
  if (upper !== undefined && passed.length > 0) notes.push(...boundNotes(workload, value, steps.find((step) => step.at === upper)!));
  if (workload.requestsPerStep < MIN_P99_REQUESTS) {
    notes.push(`p99 of ${workload.requestsPerStep} requests per step is close to their slowest one; ${MIN_P99_REQUESTS}+ per step give a steadier p99`);
  }
  return {
    over: workload.over,
    slo: workload.slo,
    value,
    ...(upper !== undefined && { upper }),
    steps: [...steps],
    notes,
  };
}

/** A step that missed on latency (its why names a p99), not on failed requests or an early stop. */
const missedOnLatency = (step: CapacityStep): boolean => step.why?.includes(' p99 ') ?? false;

/** Above this ratio between the capacity and the level that missed (rates), the bracket is worth narrowing. */
const WIDE_RATE_BRACKET = 1.1;

/**
 * Not one level met the SLOs: the lowest step's cause, and a next step that can work: lowering min cannot go below
 * one request at a time, and failed requests are not a latency matter.
 */
function noCapacityNote(workload: CapacityWorkload, steps: readonly CapacityStep[]): string {
  const lowest = steps.reduce((best, step) => (step.at < best.at ? step : best));
  const why = lowest.why ? ` (${lowest.why})` : '';
  if (!missedOnLatency(lowest)) {
    return `0: at the lowest level measured, ${lowest.label}, the server did not serve every request${why}; fix that (see the server log), then search again`;
  }
  if (workload.over === 'concurrency' && lowest.at <= 1) {
    return `0: even one request at a time (${lowest.label}) missed the SLOs${why}: no load meets them on this server; relax the SLOs or make the server faster`;
  }
  return `0: even the lowest level (${capacityText(workload.over, lowest.at)}) missed the SLOs${why}; lower min to find the capacity`;
}

/**
 * What the level above the capacity leaves open: it failed requests (the level where latency breaks was never
 * measured: the capacity is bounded by failures), or it is far above the capacity (steps ran out before the search
 * came close to where the SLOs break).
 */
function boundNotes(workload: CapacityWorkload, value: number, above: CapacityStep): string[] {
  const notes: string[] = [];
  if (!missedOnLatency(above)) {
    notes.push(
      `${above.label} failed (${above.why ?? 'not a valid level'}) rather than missing the latency SLOs: where latency breaks was not measured; the capacity is bounded by failures`,
    );
  }
  const wide = workload.over === 'concurrency' ? above.at - value > 1 : above.at / value > WIDE_RATE_BRACKET;
  if (wide) {
    notes.push(
      `the SLOs break somewhere between ${capacityText(workload.over, value)} and ${capacityText(workload.over, above.at)}, never measured closer in ${workload.steps} steps; raise steps to narrow it`,
    );
  }
  return notes;
}

/**
 * Run the search: measure each step with `measure` (one level, as load/run.ts measures any level) until
 * nextCapacityLevel is done or `signal` aborts. Returns the levels in the order measured; the one standing for the
 * search (the capacity's, else the lowest step's) carries the result in `capacity`.
 */
export async function searchCapacity(
  workload: CapacityWorkload,
  measure: (plan: LevelPlan, index: number) => Promise<LevelResult>,
  signal?: AbortSignal,
): Promise<LevelResult[]> {
  const levels: LevelResult[] = [];
  const steps: CapacityStep[] = [];
  for (let at = nextCapacityLevel(workload, steps); at !== undefined && !signal?.aborted; at = nextCapacityLevel(workload, steps)) {
    const plan = capacityLevelPlan(workload, at);
    const level = await measure(plan, levels.length);
    levels.push(level);
    steps.push({ at, label: plan.label, ...judgeStep(level, workload.slo) });
  }
  if (levels.length === 0) return levels;
  const search = capacityOf(workload, steps);
  const standing = search.value > 0 ? steps.findIndex((step) => step.passed && step.at === search.value) : lowestStep(steps);
  levels[standing] = { ...levels[standing]!, capacity: search };
  return levels;
}

function lowestStep(steps: readonly CapacityStep[]): number {
  return steps.reduce((best, step, index) => (step.at < steps[best]!.at ? index : best), 0);
}

/** The level a trial keeps: the one standing for a capacity search, else the first (every other workload has one). */
export function trialLevelOf(levels: readonly LevelResult[]): LevelResult | undefined {
  return levels.find((level) => level.capacity !== undefined) ?? levels[0];
}

const SLO_SPELLING: ReadonlyArray<[keyof CapacitySlo, string]> = [
  ['ttftP99Ms', 'ttft-p99'],
  ['tpotP99Ms', 'tpot-p99'],
  ['e2eP99Ms', 'e2e-p99'],
];

/** `ttft-p99=500ms,tpot-p99=50ms`: the SLOs as `bench --capacity-slo` takes them (parseCapacitySlo reads it back). */
export function capacitySloSpec(slo: CapacitySlo): string {
  return SLO_SPELLING.filter(([key]) => slo[key] !== undefined)
    .map(([key, name]) => `${name}=${slo[key]}ms`)
    .join(',');
}

/** Read `ttft-p99=500ms,tpot-p99=50ms,e2e-p99=2s`; throws an Error naming the part it cannot read. */
export function parseCapacitySlo(text: string): CapacitySlo {
  const slo: CapacitySlo = {};
  for (const part of text.split(',')) {
    const [name, value] = part.split('=', 2).map((piece) => piece.trim()) as [string, string | undefined];
    const key = SLO_SPELLING.find(([, spelling]) => spelling === name)?.[0];
    const match = value === undefined ? null : /^(\d+(?:\.\d+)?)(ms|s)$/.exec(value);
    if (!key || !match)
      throw new Error(`cannot read "${part}": expected ${SLO_SPELLING.map(([, spelling]) => spelling).join(', ')}=DURATION, e.g. ttft-p99=500ms`);
    // A second limit on the same figure would silently replace the first.
    if (slo[key] !== undefined) throw new Error(`"${name}" is given twice: give each limit once`);
    slo[key] = Number(match[1]) * (match[2] === 's' ? 1000 : 1);
  }
  return slo;
}

/** The workload's name in trials and reports: `capacity:c=1..32,tpot-p99=50ms` (axis, range and SLOs). */
export function capacityLabel(workload: CapacityWorkload): string {
  const range = workload.over === 'rate' ? `rate=${workload.min}..${workload.max}/s` : `c=${workload.min}..${workload.max}`;
  return `capacity:${range},${capacitySloSpec(workload.slo)}`;
}
