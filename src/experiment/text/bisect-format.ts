import { formatChanges } from '../../fingerprint/diff.js';
import type { BisectSetupRecord } from '../../store/bisect.js';
import { formatDuration, formatNumber, formatPercent, formatShare } from '../../util/format.js';
import type { BisectView, SubsetResult } from '../analysis/bisect.js';
import { formatDifference } from '../analysis/bisect-differences.js';
import type { BisectPrediction } from '../plan/bisect-plan.js';
import { gpuHoursText } from './plan-format.js';

/** "−13.2% (CI −14.0% … −12.1%)": a subset's change with its interval. */
export function changeText(result: SubsetResult): string {
  const pct = (value: number | null) => (value === null ? '—' : formatPercent(value * 100));
  return `${pct(result.change)} (CI ${pct(result.changeLow)} … ${pct(result.changeHigh)})`;
}

const members = (names: readonly string[]): string => names.join(' + ');

/** What bisect compares and what it will cost, before round 1 (the `plan` of a bisect). */
export function formatBisectPlan(setup: BisectSetupRecord, prediction: BisectPrediction, labels: { current: string; reference: string }): string {
  const lines = [
    `bisect: ${labels.current} vs ${labels.reference}, ${setup.variant} × ${setup.workload}, ${setup.metric}; settings whose change reaches ${formatShare(setup.tolerance)} are named`,
    `differences it sets (${setup.differences.length}), each tested as the current configuration with a subset restored to the reference value:`,
    ...setup.differences.map((difference) => `  ${formatDifference(difference)}`),
  ];
  if (setup.fixed.length > 0) {
    lines.push('differences it cannot set (not tested; they stay as they are now):');
    for (const fixed of setup.fixed) lines.push(`  ${formatChanges([fixed])}: ${fixed.why}`);
  }
  const { round1, worst, oneAtATime } = prediction;
  lines.push(
    `round 1: ${round1.configs.length} configurations (current, reference, ${round1.configs.length - 2} halves) × ${setup.trials} trials, ${prediction.schedule} (${round1.starts} server starts) = ${round1.trials} trials, predicted ${formatPredictedWall(round1.wallMs)}${gpuSuffix(round1.gpuHours)}`,
    `at most ${worst.rounds} rounds, ${worst.trials} trials${wallSuffix(worst.wallMs)}${gpuSuffix(worst.gpuHours)} if every half matters; one at a time: ${oneAtATime.trials} trials${wallSuffix(oneAtATime.wallMs)}${gpuSuffix(oneAtATime.gpuHours)}`,
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
  const medians = view.medians ? `: ${formatNumber(view.medians.current)} vs ${formatNumber(view.medians.reference)} ${labels.unit}` : '';
  lines.push(`total change, current vs reference: ${changeText(answer.total)}${medians}`);
  const tolerance = formatShare(setup.tolerance);
  if (!answer.total.matters) {
    lines.push(`the total change is not significant or below the tolerance (${tolerance}): nothing to explain`);
  } else {
    const width = Math.max(0, ...answer.responsible.map((entry) => entry.name.length));
    if (answer.responsible.length + answer.interactions.length + answer.together.length > 0) {
      lines.push('responsible (restored alone, vs the current configuration):');
    }
    for (const entry of answer.responsible) lines.push(`  ${entry.name.padEnd(width)}  ${changeText(entry.result)}`);
    for (const interaction of answer.interactions) {
      lines.push(
        `  ${members(interaction.members)}: only together ${changeText(interaction.result)}; apart: ${interaction.parts.map((part) => `${members(part.members)} ${changeText(part)}`).join(', ')}`,
      );
    }
    for (const group of answer.together) {
      lines.push(
        `  ${members(group.members)}: together ${changeText(group.result)}; apart too small to resolve with ${setup.trials} trials: ${group.parts.map((part) => `${members(part.members)} ${changeText(part)}`).join(', ')}`,
      );
    }
    if (answer.negligible.length > 0) {
      lines.push(`below the tolerance (${tolerance}) or not significant, not looked into further:`);
      for (const result of answer.negligible) lines.push(`  ${members(result.members)}  ${changeText(result)}`);
    }
    if (answer.explained !== null && answer.responsible.length + answer.interactions.length + answer.together.length > 0) {
      lines.push(`together ${formatShare(answer.explained)} of the ${formatPercent((answer.total.change ?? 0) * 100)}`);
    }
  }
  if (answer.unresolved.length > 0)
    lines.push(`not finished: ${answer.unresolved.length} subsets still to test (${answer.unresolved.map((test) => members(test.members)).join('; ')})`);
  lines.push(costLine(view));
  const fix = fixLines(view);
  if (fix.length > 0) lines.push('fix (the reference values of the responsible settings):', ...fix.map((line) => `  ${line}`));
  return lines.join('\n');
}

function costLine(view: BisectView): string {
  const { trials, gpuHours, oneAtATime } = view.cost;
  const compare =
    (view.answer?.unresolved.length ?? 0) > 0
      ? 'not finished'
      : trials < oneAtATime.trials
        ? `halving used ${oneAtATime.trials - trials} fewer`
        : trials === oneAtATime.trials
          ? 'the same'
          : `halving used ${trials - oneAtATime.trials} more: it pays when few of many differences matter`;
  const oneGpu = oneAtATime.gpuHours === undefined ? '' : `, ${gpuHoursText(oneAtATime.gpuHours)} GPU-hours at this bisect's cost per trial`;
  return `cost: ${trials} trials, ${gpuHoursText(gpuHours)} GPU-hours; one at a time (each difference restored alone beside the two configurations, ${view.setup.trials} trials each): ${oneAtATime.trials} trials${oneGpu} (${compare})`;
}

/** The settings to restore, as a shell block (variables) and a flag list. */
function fixLines(view: BisectView): string[] {
  const answer = view.answer;
  if (!answer) return [];
  const names = new Set([...answer.responsible.map((entry) => entry.name), ...[...answer.interactions, ...answer.together].flatMap((entry) => entry.members)]);
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
