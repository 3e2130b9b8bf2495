import { formatNumber } from '../../util/format.js';
import { leadersOf, type SearchLeader, type SearchSummary } from '../analysis/search-summary.js';
import { type ScheduleResult, scheduleFileName } from '../analysis/spec-schedule.js';

/**
 * Where a search stands or how it ended, for the run's final text, `show` and the reports: the best config with its
 * tolerance ("… within 2% of the best of 215 points, 37 measured"), the best per level, the budget spent, what is
 * still unresolved. With a tie-break, the best is its preferred point among those within the tolerance of the leader.
 */
export function formatSearchSummary(summary: SearchSummary): string {
  return searchSummaryLines(summary).join('\n');
}

export function searchSummaryLines(summary: SearchSummary): string[] {
  const tolerance = shareText(summary.tolerance);
  const resolved = summary.done?.resolved ?? false;
  const of = `of ${summary.points} points${summary.points < summary.combinations ? ` (${summary.combinations} combinations, the rest breaking a constraint)` : ''}, ${summary.measured} measured in ${summary.blocks} block${summary.blocks === 1 ? '' : 's'}`;
  const lines = [summary.done ? `search: ${summary.done.reason}` : `search: not finished (${summary.steps} block${summary.steps === 1 ? '' : 's'} decided)`];
  const best = (leader: SearchLeader): string => leader.preferred ?? leader.variant;
  const { across, levels } = leadersOf(summary);
  if (across) {
    lines.push(
      resolved
        ? `best config across levels: ${best(across)}, within ${tolerance} of the best ${of} (${shareText(summary.confidence)} confidence)`
        : `best config so far across levels: ${best(across)}, the leader ${of}; not resolved`,
    );
  } else lines.push(`${summary.points} points, ${summary.measured} measured`);
  if (levels.length > 0) {
    lines.push(resolved ? `best per level (each within ${tolerance} of that level's best):` : 'best per level so far:');
    for (const leader of levels) lines.push(`  ${leaderText(leader, summary.unit)}`);
  }
  lines.push(`${summary.out} point${summary.out === 1 ? '' : 's'} out or settled; ${summary.alive} still racing${summary.done ? ' when it ended' : ''}`);
  lines.push(`budget: ${budgetText(summary)}`);
  if (summary.done && summary.done.unresolved.length > 0) lines.push('unresolved:', ...summary.done.unresolved.map((line) => `  ${line}`));
  return lines;
}

/** "0.031 GPU-hours spent of 0.033 (94%)", or without a budget "0.031 GPU-hours spent, no limit". */
export function budgetText(summary: Pick<SearchSummary, 'spentGpuSeconds' | 'budgetGpuSeconds'>): string {
  const spent = `${formatNumber(summary.spentGpuSeconds / 3600)} GPU-hours spent`;
  if (summary.budgetGpuSeconds === undefined) return `${spent}, no limit`;
  return `${spent} of ${formatNumber(summary.budgetGpuSeconds / 3600)} (${shareText(summary.spentGpuSeconds / summary.budgetGpuSeconds)})`;
}

/**
 * One leader in words: "c=8: eagle3-s3-k2-d7 3,323 tok/s (+5.2% over the next)"; across levels its value is a
 * ratio to each level's leader (1 = leads every level); a tie-break's preferred point is named beside it.
 */
export function leaderText(leader: SearchLeader, unit: string): string {
  const value =
    leader.level === '*' ? `at ${formatNumber(leader.value * 100)}% of the level leaders (geometric mean)` : `${formatNumber(leader.value)} ${unit}`.trimEnd();
  const margin = leader.margin === undefined ? '' : ` (+${formatNumber(leader.margin * 100)}% over the next)`;
  const preferred = leader.preferred !== undefined ? `, tie-break prefers ${leader.preferred}` : '';
  return `${leader.level === '*' ? 'across levels' : leader.level}: ${leader.variant} ${value}${margin}${preferred}`;
}

/** The engine schedule of the per-level bests (analysis/spec-schedule.ts), and the file `servelab report` writes. */
export function formatSpecSchedule(result: ScheduleResult, runId: number): string[] {
  if (!result) return [];
  if ('none' in result) return [`engine schedule: none written (${result.none})`];
  const { schedule } = result;
  const per = schedule.levels.map((level) => `${level.level} → ${level.depth} (${level.variant})`).join(', ');
  return [
    `engine schedule (${schedule.engine === 'vllm' ? 'vLLM' : 'SGLang'} ${schedule.setting}): ${JSON.stringify(schedule.ranges.map(([low, high, depth]) => [low, high, depth]))} from each level's best: ${per}`,
    `  \`servelab report ${runId}\` writes it as ${scheduleFileName(runId, schedule.engine)}; ${schedule.usage}`,
  ];
}

/** 0.02 → "2%", 0.955 → "95.5%". */
export function shareText(share: number): string {
  return `${Number((share * 100).toPrecision(3))}%`;
}
