import { formatChanges } from '../../fingerprint/diff.js';
import type { BisectSetupRecord } from '../../store/bisect.js';
import { formatDuration, formatNumber, formatPercent, formatShare } from '../../util/format.js';
import type { BisectView, Effect } from '../analysis/bisect.js';
import { MAX_FACTORS } from '../analysis/bisect-design.js';
import { formatDifference } from '../analysis/bisect-differences.js';
import type { BisectPrediction } from '../plan/bisect-plan.js';
import { gpuHoursText } from './plan-format.js';

/** "−13.2% (CI −14.0% … −12.1%)": an effect with its interval. */
export function changeText(effect: Effect): string {
  const pct = (value: number | null) => (value === null ? '—' : formatPercent(value * 100));
  return `${pct(effect.change)} (CI ${pct(effect.changeLow)} … ${pct(effect.changeHigh)})`;
}

const members = (names: readonly string[]): string => names.join(' + ');

/** What bisect compares and what it will cost, before round 1 (the `plan` of a bisect). */
export function formatBisectPlan(setup: BisectSetupRecord, prediction: BisectPrediction, labels: { current: string; reference: string }): string {
  const lines = [
    `bisect: ${labels.current} vs ${labels.reference}, ${setup.variant} × ${setup.workload}, ${setup.metric}; settings whose change reaches ${formatShare(setup.tolerance)} are named`,
    `differences it sets (${setup.differences.length}), each configuration the current one with some restored to the reference value:`,
    ...setup.differences.map((difference) => `  ${formatDifference(difference)}`),
  ];
  if (setup.fixed.length > 0) {
    lines.push('differences it cannot set (not tested; they stay as they are now):');
    for (const fixed of setup.fixed) lines.push(`  ${formatChanges([fixed])}: ${fixed.why}`);
  }
  const { round1, worst, oneAtATime } = prediction;
  const factors = setup.differences.length <= MAX_FACTORS ? 'each difference' : `${MAX_FACTORS} groups of differences`;
  lines.push(
    `round 1: a screening design, ${factors} restored in half of ${prediction.configurations} configurations × ${prediction.trialsPerConfig} trials, ${prediction.schedule} (${round1.starts} server starts) = ${round1.trials} trials, predicted ${formatPredictedWall(round1.wallMs)}${gpuSuffix(round1.gpuHours)}; each effect as precise as ${Math.floor(round1.trials / 2)} trials per arm one at a time`,
    `${worst.rounds > 1 ? `at most ${worst.rounds} rounds (every group splits), ` : ''}a round of pairs more if an interaction's pair is ambiguous; one at a time (${setup.differences.length} + 2 configurations × ${setup.trials} trials per arm): ${oneAtATime.trials} trials${wallSuffix(oneAtATime.wallMs)}${gpuSuffix(oneAtATime.gpuHours)}`,
  );
  if (setup.maxTrials !== undefined) lines.push(`budget: --max-trials ${setup.maxTrials} (a round that would pass it is not started)`);
  return lines.join('\n');
}

function formatPredictedWall(ms: number | undefined): string {
  return ms === undefined ? 'unknown wall time' : formatDuration(ms);
}
const wallSuffix = (ms: number | undefined): string => (ms === undefined ? '' : ` (${formatDuration(ms)})`);
const gpuSuffix = (gpuHours: number | undefined): string => (gpuHours === undefined ? '' : `, ${gpuHoursText(gpuHours)} GPU-hours`);

/** The answer with its numbers: responsible settings, interactions, the share explained, the cost, the fix. */
export function formatBisect(bisectId: number, view: BisectView, labels: { current: string; reference: string; unit: string }): string {
  const { setup, answer } = view;
  const head = `bisect ${bisectId}: ${labels.current} vs ${labels.reference}, ${setup.variant} × ${setup.workload}, ${setup.metric}`;
  const rounds = view.rounds.map(
    (round) => `round ${round.round}: run ${round.runId}, ${round.configurations} configurations, ${round.trials} trials (${round.status})`,
  );
  if (!answer) return [head, ...rounds, 'no round finished yet'].join('\n');
  const lines = [head, ...rounds];
  const medians = view.medians ? `; medians ${formatNumber(view.medians.current)} vs ${formatNumber(view.medians.reference)} ${labels.unit}` : '';
  lines.push(`total change, current vs reference (all effects and interactions): ${changeText(answer.total)}${medians}`);
  const tolerance = formatShare(setup.tolerance);
  const named = answer.responsible.length + answer.interactions.length;
  if (named > 0) lines.push('responsible (each restored alone, the others as now):');
  const width = Math.max(0, ...answer.responsible.map((effect) => members(effect.members).length));
  for (const effect of answer.responsible) lines.push(`  ${members(effect.members).padEnd(width)}  ${changeText(effect)}`);
  for (const pair of answer.interactions) {
    lines.push(
      `  ${members(pair.members.flat())}: together ${changeText(pair.joint)}, of which only together ${changeText(pair.interaction)}; apart: ${pair.apart.map((effect) => `${members(effect.members)} ${changeText(effect)}`).join(', ')}`,
    );
  }
  if (answer.unsplit.length > 0) {
    lines.push('groups that matter, not split yet:');
    for (const effect of answer.unsplit) lines.push(`  ${members(effect.members)}  ${changeText(effect)}`);
  }
  if (answer.negligible.length > 0) {
    lines.push(
      `below the tolerance (${tolerance}) or not significant${answer.negligible.some((effect) => effect.members.length > 1) ? ' (a group not looked into)' : ''}:`,
    );
    const narrow = Math.max(0, ...answer.negligible.map((effect) => members(effect.members).length));
    for (const effect of answer.negligible) lines.push(`  ${members(effect.members).padEnd(narrow)}  ${changeText(effect)}`);
  }
  if (named === 0)
    lines.push(
      answer.total.matters ? 'no single setting or pair reaches the tolerance' : `the total change is not significant or below the tolerance (${tolerance})`,
    );
  if (answer.explained) {
    const { share, low, high } = answer.explained;
    const ci = low === null || high === null ? '' : ` (CI ${formatShare(low)} … ${formatShare(high)})`;
    const over = Math.round(share * 100) > 100 ? ': over 100% is noise (effects below the tolerance pulling the other way), the CI says how much' : '';
    lines.push(
      `share explained (the named effects over the total, log scale): ${formatShare(share)}${ci} of the ${formatPercent(answer.total.change * 100)}${over}`,
    );
  }
  if (view.next.length > 0) lines.push(`not finished: the next round has ${view.next.length} configurations`);
  lines.push(costLine(view));
  const fix = fixLines(view);
  if (fix.length > 0) lines.push('fix (the reference values of the responsible settings):', ...fix.map((line) => `  ${line}`));
  return lines.join('\n');
}

function costLine(view: BisectView): string {
  const { trials, gpuHours, starts, oneAtATime, samePrecision } = view.cost;
  const gpu = (hours: number | undefined): string => (hours === undefined ? '' : `, ${gpuHoursText(hours)} GPU-hours`);
  const versus = (other: number): string =>
    view.next.length > 0 ? 'not finished' : other > trials ? `${other - trials} fewer here` : `${trials - other} more here`;
  const precise =
    samePrecision.perArm > view.setup.trials
      ? `; for each effect as precise as here (${samePrecision.perArm} per arm): ${samePrecision.trials} trials${gpu(samePrecision.gpuHours)} (${versus(samePrecision.trials)})`
      : '';
  return [
    `cost: ${trials} trials, ${starts} server starts${gpu(gpuHours)}`,
    `one at a time (${view.setup.differences.length} + 2 configurations, at this bisect's measured cost per start and per trial): ${view.setup.trials} trials per arm: ${oneAtATime.trials} trials${gpu(oneAtATime.gpuHours)} (${versus(oneAtATime.trials)})${precise}`,
  ].join('\n');
}

/** The settings to restore, as a shell block (variables) and a flag list. */
function fixLines(view: BisectView): string[] {
  const answer = view.answer;
  if (!answer) return [];
  const names = new Set([...answer.responsible.flatMap((effect) => effect.members), ...answer.interactions.flatMap((pair) => pair.members.flat())]);
  const chosen = view.setup.differences.filter((difference) => names.has(difference.name));
  const env = chosen.filter((difference) => difference.kind === 'env');
  const flags = chosen.filter((difference) => difference.kind === 'flag');
  const lines = env.map((difference) =>
    difference.reference === undefined ? `unset ${difference.name}` : `export ${difference.name}=${shellQuote(difference.reference)}`,
  );
  const set = flags
    .filter((flag) => flag.reference !== undefined)
    .map((flag) => (flag.reference === '' ? flag.name : `${flag.name} ${shellQuote(flag.reference!)}`));
  const drop = flags.filter((flag) => flag.reference === undefined).map((flag) => flag.name);
  if (set.length > 0) lines.push(`server flags: ${set.join(' ')}`);
  if (drop.length > 0) lines.push(`drop flags: ${drop.join(' ')}`);
  return lines;
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}
